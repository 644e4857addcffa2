import AttestCore
import Testing

@Suite struct ASN1ReaderTests {
    private func first(_ hex: String, _ rules: ASN1Reader.Rules = .der) throws(ASN1Error) -> ASN1Element {
        var reader = ASN1Reader(Hex.decode(hex)!, rules: rules)
        let element = try reader.next()
        try reader.finish()
        return element
    }

    private func kind(_ hex: String, _ rules: ASN1Reader.Rules = .der) -> ASN1Error.Kind? {
        do {
            _ = try first(hex, rules)
            return nil
        } catch {
            return error.kind
        }
    }

    @Test func readsDefiniteLengths() throws {
        let e = try first("0403010203")
        #expect(e.tag == .octetString)
        #expect(e.contentRange == 2..<5)
        let long = try first("0481" + "80" + String(repeating: "00", count: 128))
        #expect(long.contentEnd - long.contentStart == 128)
    }

    @Test func derRejectsNonMinimalAndIndefiniteLengths() {
        #expect(kind("048103010203") == .invalidLength)
        #expect(kind("04820003010203") == .invalidLength)
        #expect(kind("3080020101" + "0000") == .indefiniteLength)
    }

    @Test func berReadsIndefiniteLengthsAndSegmentedOctetStrings() throws {
        let bytes = Hex.decode("2480040201020401030000")!
        var reader = ASN1Reader(bytes, rules: .ber)
        let e = try reader.next()
        try reader.finish()
        #expect(e.indefinite)
        #expect(try reader.octets(of: e) == [1, 2, 3])
    }

    @Test func berRejectsIndefinitePrimitivesAndMissingEndOfContents() {
        #expect(kind("0480010200", .ber) == .invalidLength)
        #expect(kind("30800201010201", .ber) != nil)
    }

    @Test func berBoundsNesting() {
        let deep = String(repeating: "3080", count: 40) + String(repeating: "0000", count: 40)
        #expect(kind(deep, .ber) == .tooDeep)
    }

    @Test func rejectsTruncationAndTrailingBytes() {
        #expect(kind("0405010203") == .truncated)
        #expect(kind("04") == .truncated)
        #expect(kind("040100ff") == .trailingData)
    }

    @Test func integersMustBeMinimal() throws {
        let reader = ASN1Reader(Hex.decode("02020001")!)
        var r = reader
        let e = try r.next()
        #expect(throws: ASN1Error.self) { try reader.integer(of: e) }
        var ok = ASN1Reader(Hex.decode("020200ff")!)
        let f = try ok.next()
        #expect(try ok.integer(of: f) == 255)
    }

    @Test func highTagNumbers() throws {
        // Apple's extension 1.2.840.113635.100.8.5 uses [PRIVATE/CONTEXT 1200]-style tags: bf 89 30.
        let e = try first("bf893003020100")
        #expect(e.tag == ASN1Tag(.contextSpecific, constructed: true, number: 1200))
        #expect(kind("bf1e0100") == .invalidValue)
    }

    @Test func objectIdentifiersRoundTrip() {
        #expect(OID.appleNonce.description == "1.2.840.113635.100.8.2")
        #expect(OID("2.5.29.19").encoded == [0x55, 0x1d, 0x13])
        #expect(OID(encoded: [0x80, 0x01]) == nil)
        #expect(OID(encoded: [0x2a, 0x86]) == nil)
    }

    @Test func timesFollowRFC5280() {
        #expect(Timestamp(rfc3339: "2049-12-31T23:59:59Z") != nil)
        var r = ASN1Reader(Hex.decode("170d3236303432303138313331325a")!)
        let e = try! r.next()
        #expect(try! r.time(of: e) == Timestamp(rfc3339: "2026-04-20T18:13:12Z"))
        var bad = ASN1Reader(Hex.decode("170d3236313332303138313331325a")!)
        let b = try! bad.next()
        #expect(throws: ASN1Error.self) { try bad.time(of: b) }
    }
}
