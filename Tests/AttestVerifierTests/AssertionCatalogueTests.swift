import AttestCore
import AttestCrypto
import AttestMint
import AttestVerifier
import Testing

/// The assertion negative catalogue: a valid minted assertion with exactly one thing broken.
@Suite struct AssertionCatalogueTests {
    typealias F = MintFixture
    let verifier = AssertionVerifier()
    let stored = StoredDevice(publicKey: ECPublicKey(p256Point: MintFixture.device.publicKeyX962)!, counter: 41)

    private func mint(counter: UInt32 = 42, _ options: AssertionOptions = AssertionOptions()) -> [UInt8] {
        try! F.device.mintAssertion(
            teamId: F.teamId, bundleId: F.bundleId, clientDataHash: F.clientDataHash, counter: counter, options: options
        ).assertion
    }

    private func request(_ assertion: [UInt8], keyId: [UInt8] = F.device.keyId) -> AssertionRequest {
        AssertionRequest(
            teamId: F.teamId, bundleId: F.bundleId, keyId: Base64.encode(keyId), assertion: Base64.encode(assertion),
            clientData: .hash(Base64.encode(F.clientDataHash)))
    }

    private func verify(_ assertion: [UInt8], device: StoredDevice?? = nil) -> Result<VerifiedAssertion, VerificationFailure> {
        verifier.verify(request(assertion), device: device ?? stored)
    }

    @Test func validAssertionAdvancesTheCounter() throws {
        let verified = try verify(mint()).get()
        #expect(verified.counter == 42)
        #expect(verified.extensions == nil)
        #expect(try verify(mint(counter: 1_000_000)).get().counter == 1_000_000)
    }

    @Test func highAndLowSAreBothValid() {
        #expect(verify(mint(AssertionOptions(sValue: .high))).outcome == "ok")
        #expect(verify(mint(AssertionOptions(sValue: .low))).outcome == "ok")
    }

    @Test func flagsDoNotMatterAndATIsIgnored() {
        #expect(verify(mint(AssertionOptions(flags: 0x00))).outcome == "ok")
        #expect(verify(mint(AssertionOptions(flags: 0x45))).outcome == "ok")
    }

    @Test func extensionMapIsParsedWithOrWithoutED() throws {
        let map = CBORItem.appleExtensions(validationCategory: 2)
        let plain = try verify(mint(AssertionOptions(extensions: map))).get()
        #expect(plain.extensions?.validationCategoryNumber == 2)
        #expect(verify(mint(AssertionOptions(flags: 0xC0, extensions: map))).outcome == "ok")
        #expect(verify(mint(AssertionOptions(flags: 0x80))).outcome == "assertion_invalid/malformed_cbor")
    }

    @Test func anythingButOneMapAfterTheHeaderIsTrailingData() {
        for transform: @Sendable ([UInt8]) -> [UInt8] in [{ $0 + [0x00] }, { $0 + [0xa0, 0xa0] }, { $0 + [0xff] }, { $0 + [0x41, 0x00] }] {
            // Correctly signed over the bad bytes: the structure check comes before the signature.
            #expect(verify(mint(AssertionOptions(transformAuthenticatorData: transform))).outcome == "assertion_invalid/trailing_data")
        }
    }

    @Test func counterMustIncrease() {
        #expect(verify(mint(counter: 41)).outcome == "assertion_invalid/counter_not_increasing")
        #expect(verify(mint(counter: 7)).outcome == "assertion_invalid/counter_not_increasing")
    }

    @Test func signatureMustBeES256OverTheNonceByTheStoredKey() {
        #expect(verify(mint(AssertionOptions(signingDevice: F.otherDevice))).outcome == "assertion_invalid/signature_invalid")
        #expect(verify(mint(AssertionOptions(signedDigest: .nonce))).outcome == "assertion_invalid/signature_invalid")
        for encoding in [AssertionOptions.SignatureEncoding.p1363, .derWithTrailingByte, .zeroR] {
            #expect(verify(mint(AssertionOptions(encoding: encoding))).outcome == "assertion_invalid/signature_invalid")
        }
        var other = request(mint())
        other.clientData = .hash(Base64.encode(Digest.sha256.hash(Array("other".utf8))))
        #expect(verifier.verify(other, device: stored).outcome == "assertion_invalid/signature_invalid")
    }

    @Test func rpIdHashMustBeTheAppId() {
        #expect(verify(mint(AssertionOptions(rpIdAppId: "OTHER.com.example.catalogue"))).outcome == "assertion_invalid/rp_id_mismatch")
    }

    @Test func unknownKeyRequiresReattestation() {
        #expect(verify(mint(), device: .some(nil)).outcome == "reattest_required/unknown_key")
        // Structural problems still come first.
        #expect(verify(mint() + [0], device: .some(nil)).outcome == "assertion_invalid/trailing_data")
    }

    @Test func objectMustBeAStrictMapOfSignatureAndAuthenticatorData() {
        let minted = try! F.device.mintAssertion(teamId: F.teamId, bundleId: F.bundleId, clientDataHash: F.clientDataHash, counter: 42)
        let cases: [(CBORItem, String)] = [
            (.map([("authenticatorData", .bytes(minted.authenticatorData))]), "assertion_invalid/malformed_cbor"),
            (.map([("signature", .text("sig")), ("authenticatorData", .bytes(minted.authenticatorData))]), "assertion_invalid/malformed_cbor"),
            (.map([("signature", .bytes(minted.signature)), ("authenticatorData", .bytes(Array(minted.authenticatorData.prefix(36))))]),
             "assertion_invalid/malformed_cbor"),
            (.map([("signature", .bytes(minted.signature)), ("signature", .bytes(minted.signature)),
                   ("authenticatorData", .bytes(minted.authenticatorData))]), "assertion_invalid/malformed_cbor"),
            (.array([.bytes(minted.signature)]), "assertion_invalid/malformed_cbor"),
        ]
        for (item, expected) in cases { #expect(verify(item.encoded).outcome == expected) }
        #expect(verify(minted.assertion + [0x00]).outcome == "assertion_invalid/trailing_data")
    }

    @Test func inputsMustBeBase64AndKeyIdsThirtyTwoBytes() {
        var r = request(mint())
        r.assertion = "!!"
        #expect(verifier.verify(r, device: stored).outcome == "assertion_invalid/malformed_base64")
        r = request(mint(), keyId: [1, 2, 3])
        #expect(verifier.verify(r, device: stored).outcome == "key_id_invalid/key_id_mismatch")
        r = request(mint())
        r.clientData = .raw("***")
        #expect(verifier.verify(r, device: stored).outcome == "client_data_hash_invalid/malformed_base64")
        r = request([UInt8](repeating: 0, count: 5000))
        #expect(verifier.verify(r, device: stored).outcome == "assertion_invalid/too_large")
    }

    @Test func rawClientDataIsHashedAndMustContainTheChallenge() {
        let clientData = Array("{\"challenge\":\"\(F.challenge)\",\"path\":\"/api\"}".utf8)
        let assertion = try! F.device.mintAssertion(
            teamId: F.teamId, bundleId: F.bundleId, clientDataHash: Digest.sha256.hash(clientData), counter: 42
        ).assertion
        var r = request(assertion)
        r.clientData = .raw(Base64.encode(clientData))
        r.challenge = F.challenge
        #expect(verifier.verify(r, device: stored).outcome == "ok")
        r.challenge = "not-in-there"
        #expect(verifier.verify(r, device: stored).outcome == "client_data_hash_invalid/challenge_mismatch")
    }

    @Test func clientDataHashMustBeTheChallengeHashWhenAChallengeIsGiven() {
        var r = request(mint())
        r.challenge = F.challenge
        #expect(verifier.verify(r, device: stored).outcome == "ok")
        r.challenge = "other"
        #expect(verifier.verify(r, device: stored).outcome == "client_data_hash_invalid/challenge_mismatch")
    }
}
