import AttestCore
import Testing

/// The strict decoder: what it accepts, and every way it refuses (each with its error kind).
@Suite struct CBORDecoderTests {
    let decoder = CBORDecoder()

    private func decode(_ hex: String) throws(CBORError) -> CBORValue {
        try decoder.decode(Hex.decode(hex)!)
    }

    private func kind(_ hex: String) -> CBORError.Kind? {
        do {
            _ = try decode(hex)
            return nil
        } catch {
            return error.kind
        }
    }

    @Test func decodesRFC8949Examples() throws {
        #expect(try decode("00") == .unsigned(0))
        #expect(try decode("17") == .unsigned(23))
        #expect(try decode("1818") == .unsigned(24))
        #expect(try decode("1903e8") == .unsigned(1000))
        #expect(try decode("1bffffffffffffffff") == .unsigned(UInt64.max))
        #expect(try decode("20") == .negative(0))
        #expect(try decode("3863") == .negative(99))
        #expect(try decode("4401020304") == .bytes([1, 2, 3, 4]))
        #expect(try decode("6449455446") == .text("IETF"))
        #expect(try decode("83010203") == .array([.unsigned(1), .unsigned(2), .unsigned(3)]))
        #expect(try decode("a201020304")[1] == .unsigned(2))
        #expect(try decode("f4") == .bool(false))
        #expect(try decode("f6") == .null)
        #expect(try decode("c11a514b67b0") == .tagged(1, .unsigned(1_363_896_240)))
        #expect(try decode("f93c00") == .float(1.0))
        #expect(try decode("fa47c35000") == .float(100000.0))
    }

    @Test func rejectsNonMinimalHeads() {
        #expect(kind("1817") == .nonMinimalHead)
        #expect(kind("190017") == .nonMinimalHead)
        #expect(kind("1a0000ffff") == .nonMinimalHead)
        #expect(kind("1b00000000ffffffff") == .nonMinimalHead)
        #expect(kind("5801ff") == .nonMinimalHead)
        #expect(kind("f814") == .nonMinimalHead)
    }

    @Test func rejectsIndefiniteLengthsAndReservedValues() {
        #expect(kind("5f41014102ff") == .indefiniteLength)
        #expect(kind("9f01ff") == .indefiniteLength)
        #expect(kind("bf0102ff") == .indefiniteLength)
        #expect(kind("1c") == .reservedValue)
        #expect(kind("ff") == .indefiniteLength)
    }

    @Test func rejectsDuplicateMapKeys() {
        #expect(kind("a201020103") == .duplicateKey)
        #expect(kind("a2616101616102") == .duplicateKey)
        // Distinct keys of different types are fine.
        #expect(kind("a20102613102") == nil)
    }

    @Test func rejectsTrailingBytes() {
        #expect(kind("0000") == .trailingData)
        #expect(kind("a0ff") == .trailingData)
    }

    @Test func rejectsInvalidUTF8() {
        #expect(kind("62c328") == .invalidUTF8)
    }

    @Test func boundsNesting() {
        let deep = String(repeating: "81", count: 16) + "00"
        #expect(kind(deep) == nil)
        #expect(kind("81" + deep) == .tooDeep)
        #expect(kind(String(repeating: "c1", count: 17) + "00") == .tooDeep)
        // A million nested arrays fail fast instead of exhausting the stack.
        #expect(kind(String(repeating: "81", count: 1_000_000)) == .tooDeep)
    }

    @Test func refusesLengthsBeyondTheInputBeforeAllocating() {
        #expect(kind("5bffffffffffffffff") == .truncated)
        #expect(kind("9bffffffffffffffff") == .truncated)
        #expect(kind("bbffffffffffffffff") == .truncated)
        #expect(kind("9a00010000") == .truncated)
    }

    /// Drip-feed: every proper prefix of a real object fails cleanly as truncated, never crashes.
    @Test func everyTruncationOfAnAttestationObjectIsTruncated() throws {
        let object = Array(Base64.decode(AppleSample.attestationObject)!)
        #expect(throws: Never.self) { try decoder.decode(object) }
        for length in 0..<object.count {
            #expect(throws: CBORError.self) { try decoder.decode(Array(object[0..<length])) }
        }
    }

    @Test func decodePrefixReportsWhereTheItemEnds() throws {
        let (value, end) = try decoder.decodePrefix(Hex.decode("ff0a01")!, from: 1)
        #expect(value == .unsigned(10))
        #expect(end == 2)
    }
}
