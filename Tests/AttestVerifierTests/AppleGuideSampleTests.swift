import AttestCore
import AttestCrypto
import AttestJobs
import AttestVerifier
import Testing

/// Walks Apple's "Attestation Object Validation Guide" sample step by step, reproducing each value the
/// guide prints from the bytes. Where the guide's text is wrong, the test pins what the bytes say and
/// names the error (CONTRACT 4).
@Suite struct AppleGuideSampleTests {
    let sample = Fixtures.vectorCase("apple_sample_valid")
    let keyId = Base64.decode("zgSY9YSD+7TaDXssY6WlOPVS1K3Lmk+pFhlcSWE+ZV0=")!
    let challenge = Array("example_server_challenge".utf8)

    var object: AttestationObject { try! AttestationObject(cbor: Base64.decode(sample["attestationObject"]!.stringValue!)!) }
    var authData: AuthenticatorData { try! AuthenticatorData.attestation(object.authenticatorData) }

    @Test func step1CertificatesAreTheGuidesLeafAndIntermediate() throws {
        #expect(object.format == "apple-appattest")
        #expect(object.certificates.count == 2)
        #expect(Base64.encode(object.certificates[0]).hasPrefix("MIIEHTCCA6OgAwIBAgIGAZ2xPwtOMAoGCCqGSM49BAMCME8x"))
        #expect(Base64.encode(object.certificates[1]).hasPrefix("MIICQzCCAcigAwIBAgIQCbrF4bxAGtnUU5W8OBoIVDAK"))
        let leaf = try Certificate(der: object.certificates[0])
        let intermediate = try Certificate(der: object.certificates[1])
        let at = Timestamp(rfc3339: "2026-04-21T12:00:00Z")!
        let result = ChainVerifier(anchor: AppleRoots.appAttestationRoot).verify(leaf: leaf, intermediates: [intermediate], at: at)
        #expect(throws: Never.self) { try result.get() }
    }

    /// Guide error: its "expected clientDataHash" is really the composite authData ‖ clientDataHash, and the
    /// sample's clientDataHash is the raw challenge bytes, not their SHA-256 as the guide's text says.
    @Test func steps2to4CompositeAndNonce() throws {
        let composite = authData.bytes + challenge
        let guideClientDataHash = "9EZtaPketsEGIMt+Y8coMkRoXuHWRntUFg51MXIFfwNAAAAAAGFwcGF0dGVzdAAAAAAAAAAAIM4EmPWEg/u02g17LGOlpTj1UtSty5pPqRYZXElhPmVdpQECAyYgASFYIEMyVErPMj23dEQ8qvM59W5+lcck+sLBQlnzZeJEVlCyIlggtfsoW89Um8tgWUQS52gqJCfuran7Ut/tCxqxftCfqb2id2FwcGxlX2J1bmRsZV92ZXJzaW9uXzAxYTF4HGFwcGxlX3ZhbGlkYXRpb25fY2F0ZWdvcnlfMDFEAQAAAGV4YW1wbGVfc2VydmVyX2NoYWxsZW5nZQ=="
        #expect(Base64.encode(composite) == guideClientDataHash)
        let nonce = Digest.sha256.hash(composite)
        #expect(Base64.encode(nonce) == "h7fQbZOkKU5G8BHma2zEAPC6sgcpl2xhlYC0KuYL/24=")
        let leaf = try Certificate(der: object.certificates[0])
        let ext = try #require(leaf.extension(.appleNonce))
        #expect(AppleNonceExtension.nonce(from: ext.value) == nonce)
        // With SHA-256(challenge) as clientDataHash, as the guide's text describes, the nonce would differ.
        #expect(Digest.sha256(authData.bytes, Digest.sha256.hash(challenge)) != nonce)
    }

    /// Guide error: its "expected public key SHA256 hash" is SHA-256 of the keyId; the key hash is the keyId.
    @Test func step5KeyHashIsTheKeyId() throws {
        let leaf = try Certificate(der: object.certificates[0])
        #expect(leaf.publicKey.count == 65)
        #expect(Digest.sha256.hash(leaf.publicKey) == keyId)
        #expect(Base64.encode(Digest.sha256.hash(keyId)) == "inGjK2JbaAEhAsYwCns2zTyZDzsJ3OKx3Q2nnxk+mkY=")
        #expect(authData.credential!.publicKey == leaf.publicKey)
    }

    @Test func step6AppIdHashIsTheRpIdHash() {
        let appIdHash = Digest.sha256.hash(Array("1234567890.com.example.myapp".utf8))
        #expect(Base64.encode(appIdHash) == "9EZtaPketsEGIMt+Y8coMkRoXuHWRntUFg51MXIFfwM=")
        #expect(Array(authData.rpIdHash) == appIdHash)
    }

    @Test func steps7to9CounterAaguidCredentialId() {
        #expect(authData.counter == 0)
        #expect(Array(authData.credential!.aaguid) == Array("appattest".utf8) + [0, 0, 0, 0, 0, 0, 0])
        #expect(Array(authData.credential!.credentialId) == keyId)
        // The 2026 extension map follows the COSE key without the ED flag.
        #expect(authData.flags & AuthenticatorData.flagExtensionData == 0)
    }

    /// Guide error: it expects bundle version "1.0"; the bytes say "1".
    @Test func extensionsValidationCategoryAndBundleVersion() {
        let extensions = authData.extensions!
        #expect(extensions.validationCategoryNumber == 1)
        #expect(extensions.bundleVersion == .text("1"))
        #expect(extensions.otherKeys.isEmpty)
    }

    @Test func receiptFieldsParse() throws {
        guard case .bytes(let der)? = object.receipt else {
            Issue.record("no receipt")
            return
        }
        let leaf = try Certificate(der: object.certificates[0])
        let receipt = try ReceiptVerifier(anchor: AppleRoots.rootCAG3).verify(
            der, expectedAppId: "1234567890.com.example.myapp", attestedKey: leaf.publicKey,
            at: Timestamp(rfc3339: "2026-04-21T12:00:00Z")!
        ).get()
        #expect(receipt.type == "ATTEST")
        #expect(receipt.creationTime == "2026-04-21T18:13:12.153Z")
        #expect(receipt.expirationTime == "2026-07-20T18:13:12.153Z")
        #expect(receipt.environment == "production")
        #expect(receipt.payload[.clientHash] == challenge)
        #expect(receipt.riskMetric == nil)
    }

    @Test func wholeSampleIsAcceptedAtThePinnedTime() {
        let at = Timestamp(rfc3339: "2026-04-21T12:00:00Z")!
        let request = AttestationRequest(
            teamId: "1234567890", bundleId: "com.example.myapp", keyId: Base64.encode(keyId),
            attestationObject: sample["attestationObject"]!.stringValue!, clientDataHash: Base64.encode(challenge),
            challenge: "example_server_challenge")
        let result = AttestationVerifier(trust: .apple).verify(request, policy: .production, at: at)
        #expect((try? result.get())?.environment == .production)
    }
}
