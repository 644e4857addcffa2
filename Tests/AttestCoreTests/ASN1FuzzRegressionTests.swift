import AttestCore
import Testing

/// Inputs found with the fuzz targets (`ops/fuzz`, Fuzz/ASN1.swift and Fuzz/Receipt.swift): the BER
/// reader joined the segments of a constructed OCTET STRING recursively with no depth bound, so segments
/// nested in segments overflowed the stack. 16,000 levels fit in the 64 KiB of an attestation object,
/// whose receipt is parsed as BER SignedData. Now nesting is bounded like indefinite lengths are.
@Suite struct ASN1FuzzRegressionTests {
    /// A constructed OCTET STRING holding one constructed OCTET STRING, `levels` deep, around an empty
    /// primitive one: `24 len (24 len (… 04 00))`.
    static func nestedSegments(_ levels: Int) -> [UInt8] {
        var element: [UInt8] = [0x04, 0x00]
        for _ in 0..<levels { element = tlv(0x24, element) }
        return element
    }

    /// A DER header (identifier, definite length) and the contents.
    static func tlv(_ identifier: UInt8, _ contents: [UInt8]) -> [UInt8] {
        let n = contents.count
        let length: [UInt8] =
            n < 0x80 ? [UInt8(n)]
            : n < 0x100 ? [0x81, UInt8(n)]
            : n < 0x1_0000 ? [0x82, UInt8(n >> 8), UInt8(n & 0xff)]
            : [0x83, UInt8(n >> 16), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)]
        return [identifier] + length + contents
    }

    private func octetsError(_ bytes: [UInt8]) -> ASN1Error.Kind? {
        do {
            var reader = ASN1Reader(bytes, rules: .ber)
            _ = try reader.octets(of: reader.next())
            return nil
        } catch {
            return error.kind
        }
    }

    @Test func segmentsNestedBeyondTheDepthLimitAreRefused() throws {
        // 40 levels, the shape of the fuzzer's input at a readable size.
        let hex =
            "2450244e244c244a24482446244424422440243e243c243a24382436243424322430242e242c242a24"
            + "282426242424222420241e241c241a24182416241424122410240e240c240a24082406240424020400"
        #expect(octetsError(Hex.decode(hex)!) == .tooDeep)
        // Real producers segment once; a few levels still read.
        var reader = ASN1Reader(Self.nestedSegments(3), rules: .ber)
        #expect(try reader.octets(of: reader.next()) == [])
    }

    @Test func sixteenThousandNestedSegmentsAreRefusedWithoutOverflowingTheStack() {
        let input = Self.nestedSegments(16_000)
        #expect(input.count < 64 * 1024)
        #expect(octetsError(input) == .tooDeep)
    }

    @Test func receiptWhoseContentNestsSixteenThousandSegmentsIsRefused() {
        // ContentInfo { signedData, [0] SignedData { version 1, digestAlgorithms {}, encapContentInfo {
        // id-data, [0] eContent } } }: the eContent is where SignedData(ber:) joins segments.
        let signedDataOID = Hex.decode("06092a864886f70d010702")!
        let dataOID = Hex.decode("06092a864886f70d010701")!
        let encapsulated = Self.tlv(0x30, dataOID + Self.tlv(0xa0, Self.nestedSegments(16_000)))
        let signedData = Self.tlv(0x30, Hex.decode("0201013100")! + encapsulated)
        let receipt = Self.tlv(0x30, signedDataOID + Self.tlv(0xa0, signedData))
        #expect(receipt.count < 64 * 1024)
        do {
            _ = try SignedData(ber: receipt)
            Issue.record("a receipt without signer was accepted")
        } catch {
            #expect(error.kind == .tooDeep)
        }
    }
}
