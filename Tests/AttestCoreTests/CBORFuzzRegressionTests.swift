import AttestCore
import Testing

/// Inputs found with the fuzz targets (`ops/fuzz`, Fuzz/CBOR.swift): the decoder looked for duplicate map
/// keys by comparing each key with every key before it, so one map of 16,000 distinct keys, which fits in
/// the 64 KiB of an attestation object and is decoded before any signature is checked, cost 0.3 s in a
/// release build (a minute in a debug build; over libFuzzer's 5 s timeout under AddressSanitizer).
/// Keys are now found in a set.
@Suite struct CBORFuzzRegressionTests {
    /// A map of `count` entries (256 or more, for which the head `b9 cc cc` is minimal) whose keys are the
    /// distinct integers 256, 257, … and whose values are 0: `b9 cc cc 19 01 00 00 19 01 01 00 …`, four bytes
    /// an entry. `repeatFirstKey` adds one more entry whose key is the first one again.
    static func wideMap(_ count: Int, repeatFirstKey: Bool = false) -> [UInt8] {
        let entries = count + (repeatFirstKey ? 1 : 0)
        var bytes: [UInt8] = [0xb9, UInt8(entries >> 8), UInt8(entries & 0xff)]
        for i in 0..<count { bytes += [0x19, UInt8((256 + i) >> 8), UInt8((256 + i) & 0xff), 0x00] }
        if repeatFirstKey { bytes += [0x19, 0x01, 0x00, 0x00] }
        return bytes
    }

    /// Generous for a linear decode in a debug build on a busy machine; the quadratic one took a minute.
    static let bound = Duration.seconds(5)

    @Test func smallMapsStillRefuseDuplicateKeys() {
        // {256: 0, 257: 0, 256: 0}: the shape of the input at a readable size.
        #expect(throws: CBORError(.duplicateKey, at: 9)) {
            try CBORDecoder().decode(Hex.decode("a3190100001901010019010000")!)
        }
    }

    @Test func sixteenThousandKeysAreCheckedInLinearTime() throws {
        let map = Self.wideMap(16_000)
        #expect(map.count < 64 * 1024)
        var decoded: CBORValue? = nil
        let elapsed = try ContinuousClock().measure { decoded = try CBORDecoder().decode(map) }
        #expect(elapsed < Self.bound)
        guard case .map(let entries)? = decoded else {
            Issue.record("not decoded as a map")
            return
        }
        #expect(entries.count == 16_000)
    }

    @Test func aDuplicateAfterSixteenThousandKeysIsFoundInLinearTime() {
        let map = Self.wideMap(16_000, repeatFirstKey: true)
        let elapsed = ContinuousClock().measure {
            #expect(throws: CBORError(.duplicateKey, at: map.count - 4)) { try CBORDecoder().decode(map) }
        }
        #expect(elapsed < Self.bound)
    }

    @Test func attestationObjectOfSixteenThousandKeysIsRefusedInLinearTime() {
        let map = Self.wideMap(16_000)
        let elapsed = ContinuousClock().measure {
            #expect(throws: AttestationObject.Failure.malformed("fmt missing or not text")) {
                try AttestationObject(cbor: map)
            }
        }
        #expect(elapsed < Self.bound)
    }
}
