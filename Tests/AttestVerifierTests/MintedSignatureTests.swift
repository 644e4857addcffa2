import AttestCore
import AttestCrypto
import AttestMint
import Testing

/// The assertion signatures AttestMint shapes through AttestCrypto's codec are what each fault claims: high
/// or low S as asked, strict DER, r ‖ s, DER with a trailing byte, r = 0. The verifier's verdicts on them are
/// in AssertionCatalogueTests; here the bytes themselves.
@Suite struct MintedSignatureTests {
    typealias F = MintFixture

    private func signature(_ options: AssertionOptions) throws -> [UInt8] {
        try F.device.mintAssertion(
            teamId: F.teamId, bundleId: F.bundleId, clientDataHash: F.clientDataHash, counter: 1, options: options
        ).signature
    }

    @Test func sValueIsHighOrLowAsAsked() throws {
        for _ in 0..<16 {
            let high = try #require(ECDSASignatureEncoding.raw(fromDER: signature(AssertionOptions(sValue: .high)), coordinateSize: 32))
            let low = try #require(ECDSASignatureEncoding.raw(fromDER: signature(AssertionOptions(sValue: .low)), coordinateSize: 32))
            #expect(!ECDSASignatureEncoding.isLowS(p256Raw: high))
            #expect(ECDSASignatureEncoding.isLowS(p256Raw: low))
        }
    }

    /// Each call signs afresh (ECDSA draws a new k), so the shapes are compared, not the bytes.
    @Test func encodingsAreTheFaultsTheyName() throws {
        let der = try signature(AssertionOptions(sValue: .low))
        let raw = try #require(ECDSASignatureEncoding.raw(fromDER: der, coordinateSize: 32))
        #expect(ECDSASignatureEncoding.der(fromRaw: raw) == der)  // strict DER, as OpenSSL writes it
        let p1363 = try signature(AssertionOptions(sValue: .low, encoding: .p1363))
        #expect(p1363.count == 64 && ECDSASignatureEncoding.isLowS(p256Raw: p1363))
        #expect(ECDSASignatureEncoding.raw(fromDER: p1363, coordinateSize: 32) == nil)
        let trailing = try signature(AssertionOptions(sValue: .low, encoding: .derWithTrailingByte))
        #expect(trailing.last == 0 && ECDSASignatureEncoding.raw(fromDER: Array(trailing.dropLast()), coordinateSize: 32) != nil)
        #expect(ECDSASignatureEncoding.raw(fromDER: trailing, coordinateSize: 32) == nil)
        let zeroR = try signature(AssertionOptions(sValue: .low, encoding: .zeroR))
        #expect(Array(zeroR.prefix(5)) == [0x30, UInt8(zeroR.count - 2), 0x02, 0x01, 0x00])
        let zeroRRaw = try #require(ECDSASignatureEncoding.raw(fromDER: zeroR, coordinateSize: 32))
        #expect(zeroRRaw.prefix(32).allSatisfy { $0 == 0 } && ECDSASignatureEncoding.isLowS(p256Raw: zeroRRaw))
    }
}
