import AttestCore
import AttestCrypto
import AttestMint
import AttestVerifier
import Foundation
import Testing

/// The attestation negative catalogue: a valid minted object with exactly one thing broken, one test per
/// rule, each asserting the code and reason of docs/CHECK_ORDER.md.
@Suite struct AttestationCatalogueTests {
    typealias F = MintFixture

    @Test func validAttestationIsAccepted() throws {
        let verified = try F.verify(AttestationOptions()).get()
        #expect(verified.publicKey == F.device.publicKeyX962)
        #expect(verified.keyId == F.device.keyId)
        #expect(verified.environment == .production)
        #expect(verified.counter == 0)
        #expect(verified.receipt.type == "ATTEST")
        #expect(verified.extensions?.validationCategoryNumber == 1)
        #expect(verified.extensions?.bundleVersion == .text("1"))
        #expect(verified.verificationTime == F.time)
    }

    // MARK: Step 0: inputs

    @Test func inputsMustBeBase64() {
        var r = F.request(F.mint().attestationObject)
        r.attestationObject = "not base64!"
        #expect(F.verify(r).outcome == "attestation_object_invalid/malformed_base64")
        r = F.request(F.mint().attestationObject)
        r.keyId = "%%%"
        #expect(F.verify(r).outcome == "key_id_invalid/malformed_base64")
        r = F.request(F.mint().attestationObject, challenge: nil)
        r.clientDataHash = "a b"
        #expect(F.verify(r).outcome == "client_data_hash_invalid/malformed_base64")
    }

    @Test func keyIdMustBe32Bytes() {
        let r = F.request(F.mint().attestationObject, keyId: Array(F.device.keyId.prefix(31)))
        #expect(F.verify(r).outcome == "key_id_invalid/key_id_mismatch")
    }

    @Test func urlSafeUnpaddedBase64IsAccepted() {
        var r = F.request(F.mint().attestationObject)
        r.attestationObject = r.attestationObject.replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        #expect(F.verify(r).outcome == "ok")
    }

    @Test func challengeMustBeBoundByClientDataHash() {
        let object = F.mint().attestationObject
        #expect(F.verify(F.request(object, challenge: "another-challenge")).outcome == "client_data_hash_invalid/challenge_mismatch")
        #expect(F.verify(F.request(object, challenge: nil)).outcome == "ok")
    }

    @Test func rawChallengeBytesAndBase64ChallengesBind() {
        let raw = Array(F.challenge.utf8)
        let minted = try! F.pki.mintAttestation(
            device: F.device, teamId: F.teamId, bundleId: F.bundleId, clientDataHash: raw, at: F.date)
        #expect(F.verify(F.request(minted.attestationObject, clientDataHash: raw)).outcome == "ok")
        let secret: [UInt8] = (0..<32).map { UInt8($0) }
        let hashed = try! F.pki.mintAttestation(
            device: F.device, teamId: F.teamId, bundleId: F.bundleId, clientDataHash: Digest.sha256.hash(secret), at: F.date)
        let request = F.request(
            hashed.attestationObject, clientDataHash: Digest.sha256.hash(secret), challenge: Base64.encode(secret))
        #expect(F.verify(request).outcome == "ok")
    }

    @Test func oversizeObjectIsRejectedBeforeParsing() {
        let huge = F.mint().attestationObject + [UInt8](repeating: 0, count: 64 * 1024)
        #expect(F.verify(F.request(huge)).outcome == "attestation_object_invalid/too_large")
    }

    // MARK: Step 1: the CBOR object

    @Test func trailingBytesAfterTheObject() {
        #expect(F.verify(F.request(F.mint().attestationObject + [0x00])).outcome == "attestation_object_invalid/trailing_data")
    }

    @Test func objectMustBeAStrictCBORMap() {
        let m = F.mint()
        #expect(F.verify(F.request(CBORItem.array([.text("fmt")]).encoded)).outcome == "attestation_object_invalid/malformed_cbor")
        let duplicate = CBORItem.map([
            ("fmt", "apple-appattest"), ("fmt", "apple-appattest"),
            ("attStmt", .map([("x5c", .array([.bytes(m.leafDER), .bytes(m.intermediateDER)]))])),
            ("authData", .bytes(m.authData)),
        ]).encoded
        #expect(F.verify(F.request(duplicate)).outcome == "attestation_object_invalid/malformed_cbor")
        var truncated = m.attestationObject
        truncated.removeLast(10)
        #expect(F.verify(F.request(truncated)).outcome == "attestation_object_invalid/malformed_cbor")
        let noAuthData = MintedAttestation.encodeObject(x5c: [m.leafDER, m.intermediateDER], receipt: m.receipt, authData: nil)
        #expect(F.verify(F.request(noAuthData)).outcome == "attestation_object_invalid/malformed_cbor")
    }

    @Test func x5cEntriesMustBeByteStrings() {
        let m = F.mint()
        let object = CBORItem.map([
            ("fmt", "apple-appattest"), ("attStmt", .map([("x5c", .array([.text("leaf"), .bytes(m.intermediateDER)]))])),
            ("authData", .bytes(m.authData)),
        ]).encoded
        #expect(F.verify(F.request(object)).outcome == "attestation_object_invalid/malformed_cbor")
    }

    @Test func formatMustBeAppleAppAttest() {
        let m = F.mint()
        let object = MintedAttestation.encodeObject(
            format: "packed", x5c: [m.leafDER, m.intermediateDER], receipt: m.receipt, authData: m.authData)
        #expect(F.verify(F.request(object)).outcome == "attestation_object_invalid/unsupported_format")
    }

    @Test func certificatesMustBePresent() {
        let m = F.mint()
        for x5c in [nil, [[UInt8]]()] {
            let object = MintedAttestation.encodeObject(x5c: x5c, receipt: m.receipt, authData: m.authData)
            #expect(F.verify(F.request(object)).outcome == "attestation_object_invalid/missing_certificates")
        }
    }

    // MARK: Step 2: authenticator data

    @Test func authenticatorDataMustHoldTheCredential() {
        #expect(F.verify(AttestationOptions(transformAuthData: { Array($0.prefix(36)) })).outcome
            == "attestation_object_invalid/malformed_cbor")
        #expect(F.verify(AttestationOptions(transformAuthData: { Array($0.prefix(60)) })).outcome
            == "attestation_object_invalid/malformed_cbor")
        #expect(F.verify(AttestationOptions(flags: 0x00)).outcome == "attestation_object_invalid/malformed_cbor")
    }

    @Test func coseKeyMustBeES256OnP256() {
        let key = CBORItem.coseKey(publicKeyX962: F.device.publicKeyX962, algorithm: -8)
        #expect(F.verify(AttestationOptions(coseKey: key)).outcome == "attestation_object_invalid/malformed_cbor")
    }

    /// The P-256 field prime p: a coordinate at or above it is no field element.
    static let p256Prime: [UInt8] = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 12)
        + [UInt8](repeating: 0xff, count: 12)

    /// {1: 2, 3: -7, -1: 1, -2: x, -3: y}: the shape of a valid COSE key around any coordinates.
    static func coseKey(x: [UInt8], y: [UInt8]) -> CBORItem {
        .map([(1, 2), (3, -7), (-1, 1), (-2, .bytes(x)), (-3, .bytes(y))])
    }

    /// Coordinates that are no P-256 point, in a key of the right shape: each a bad COSE key at this step,
    /// not a later public_key_mismatch (the leaf certifies the device's real key).
    static let offCurveCoordinates: [(x: [UInt8], y: [UInt8])] = {
        let x = Array(F.device.publicKeyX962[1...32])
        let y = Array(F.device.publicKeyX962[33...64])
        var nudged = y
        nudged[31] ^= 0x01
        let zero = [UInt8](repeating: 0, count: 32)
        let ones = [UInt8](repeating: 0xff, count: 32)
        return [
            (x, nudged),  // off the curve
            (p256Prime, y), (ones, y), (x, p256Prime), (x, ones),  // a coordinate ≥ p
            (zero, zero),  // the point at infinity's all-zero spelling
            (zero, y), (x, zero),
        ]
    }()

    @Test func coseKeyPointMustBeOnP256() {
        for (x, y) in Self.offCurveCoordinates {
            #expect(F.verify(AttestationOptions(coseKey: Self.coseKey(x: x, y: y))).outcome
                == "attestation_object_invalid/malformed_cbor", "x \(x) y \(y)")
        }
    }

    @Test func coseKeyPointOffP256InAnotherwiseMintedObjectIsMalformedNotANonceMismatch() {
        let m = F.mint()
        let key = CBORItem.coseKey(publicKeyX962: F.device.publicKeyX962).encoded
        let start = m.authData.firstRange(of: key)!.lowerBound
        for (x, y) in Self.offCurveCoordinates {
            var authData = m.authData
            authData.replaceSubrange(start..<start + key.count, with: Self.coseKey(x: x, y: y).encoded)
            let object = MintedAttestation.encodeObject(
                x5c: [m.leafDER, m.intermediateDER], receipt: m.receipt, authData: authData)
            #expect(F.verify(F.request(object)).outcome == "attestation_object_invalid/malformed_cbor", "x \(x) y \(y)")
        }
    }

    @Test func coseKeyCoordinatesMustBe32Bytes() {
        let x = Array(F.device.publicKeyX962[1...32])
        let y = Array(F.device.publicKeyX962[33...64])
        let wrong: [(x: [UInt8], y: [UInt8])] = [
            ([], y), (x, []), (Array(x.dropFirst()), y), (x, Array(y.dropFirst())),
            ([0] + x, y), (x, [0] + y), (x + [0], y), ([0x04] + x + y, []),
        ]
        for (x, y) in wrong {
            #expect(F.verify(AttestationOptions(coseKey: Self.coseKey(x: x, y: y))).outcome
                == "attestation_object_invalid/malformed_cbor", "x \(x.count) bytes, y \(y.count) bytes")
        }
        #expect(F.verify(AttestationOptions(coseKey: Self.coseKey(x: x, y: y))).outcome == "ok")
    }

    @Test func extensionMapWithOrWithoutTheEDFlag() throws {
        let withED = try F.verify(AttestationOptions(flags: 0xC0)).get()
        #expect(withED.extensions?.validationCategoryNumber == 1)
        let none = try F.verify(AttestationOptions(extensions: nil)).get()
        #expect(none.extensions == nil)
        #expect(F.verify(AttestationOptions(flags: 0xC0, extensions: nil)).outcome == "attestation_object_invalid/malformed_cbor")
    }

    @Test func unknownExtensionKeysAreReported() throws {
        let map = CBORItem.appleExtensions(validationCategory: 3, extraEntries: [("apple_future_02", .int(7))])
        let verified = try F.verify(AttestationOptions(extensions: map)).get()
        #expect(verified.extensions?.otherKeys == ["apple_future_02"])
        #expect(verified.extensions?.validationCategoryNumber == 3)
    }

    @Test func bytesAfterTheExtensionMapAreTrailingData() {
        #expect(F.verify(AttestationOptions(transformAuthData: { $0 + [0x00] })).outcome == "attestation_object_invalid/trailing_data")
        #expect(F.verify(AttestationOptions(transformAuthData: { $0 + [0xa0] })).outcome == "attestation_object_invalid/trailing_data")
        #expect(F.verify(AttestationOptions(extensions: .int(5))).outcome == "attestation_object_invalid/trailing_data")
        #expect(F.verify(AttestationOptions(extensions: nil, transformAuthData: { $0 + [0xff, 0xff] })).outcome
            == "attestation_object_invalid/trailing_data")
    }

    // MARK: Step 3: the certificate chain

    @Test func x5cMustHoldExactlyLeafAndIntermediate() {
        let m = F.mint()
        for x5c in [[m.leafDER], [m.leafDER, m.intermediateDER, F.pki.attestationRootDER], [m.intermediateDER, m.leafDER]] {
            let object = MintedAttestation.encodeObject(x5c: x5c, receipt: m.receipt, authData: m.authData)
            #expect(F.verify(F.request(object)).outcome == "apple_validation_failed/certificate_chain_invalid")
        }
        let garbage = MintedAttestation.encodeObject(x5c: [[0x30, 0x00], m.intermediateDER], receipt: m.receipt, authData: m.authData)
        #expect(F.verify(F.request(garbage)).outcome == "apple_validation_failed/certificate_chain_invalid")
    }

    @Test func chainMustEndAtTheConfiguredAnchorNotAnyRootWithItsName() {
        let forged = try! F.otherPKI.mintAttestation(
            device: F.device, teamId: F.teamId, bundleId: F.bundleId, clientDataHash: F.clientDataHash, at: F.date)
        #expect(F.verify(F.request(forged.attestationObject)).outcome == "apple_validation_failed/certificate_chain_invalid")
    }

    @Test func intermediateMustBeACA() {
        let intermediate = AttestationOptions.Intermediate(
            notBefore: Date(timeIntervalSince1970: 1_577_836_800), notAfter: Date(timeIntervalSince1970: 2_000_000_000), isCA: false)
        #expect(F.verify(AttestationOptions(intermediate: intermediate)).outcome == "apple_validation_failed/certificate_chain_invalid")
    }

    @Test func unknownCriticalExtensionsFailThePath() {
        let critical = RawExtension(oid: "1.2.3.4.5", critical: true, value: [0x05, 0x00])
        #expect(F.verify(AttestationOptions(leafExtraExtensions: [critical])).outcome == "apple_validation_failed/certificate_chain_invalid")
        let intermediate = AttestationOptions.Intermediate(
            notBefore: Date(timeIntervalSince1970: 1_577_836_800), notAfter: Date(timeIntervalSince1970: 2_000_000_000),
            extraExtensions: [critical])
        #expect(F.verify(AttestationOptions(intermediate: intermediate)).outcome == "apple_validation_failed/certificate_chain_invalid")
        let nonCritical = RawExtension(oid: "1.2.3.4.5", value: [0x05, 0x00])
        #expect(F.verify(AttestationOptions(leafExtraExtensions: [nonCritical])).outcome == "ok")
    }

    @Test func appleLeafExtensionsOf2026AreAccepted() {
        // EKU 1.2.840.113635.100.4.24 is in every minted leaf; 1.2.840.113635.100.8.6 as Apple adds it.
        for critical in [false, true] {
            let ext = RawExtension(oid: "1.2.840.113635.100.8.6", critical: critical, value: [0x30, 0x03, 0x02, 0x01, 0x00])
            #expect(F.verify(AttestationOptions(leafExtraExtensions: [ext])).outcome == "ok")
        }
    }

    @Test func validityBoundsAreInclusive() {
        let notBefore = Date(timeIntervalSince1970: 1_776_900_000)
        let notAfter = Date(timeIntervalSince1970: 1_777_100_000)
        let options = AttestationOptions(leafNotBefore: notBefore, leafNotAfter: notAfter)
        #expect(F.verify(options, at: Timestamp(seconds: 1_776_900_000)).outcome == "ok")
        #expect(F.verify(options, at: Timestamp(seconds: 1_777_100_000)).outcome == "ok")
        #expect(F.verify(options, at: Timestamp(seconds: 1_777_100_001)).outcome == "apple_validation_failed/certificate_expired")
        #expect(F.verify(options, at: Timestamp(seconds: 1_776_899_999)).outcome == "apple_validation_failed/certificate_expired")
        #expect(F.verify(options, at: Timestamp(microseconds: 1_777_100_000_000_001)).outcome
            == "apple_validation_failed/certificate_expired")
    }

    @Test func expiredIntermediateIsCertificateExpired() {
        let intermediate = AttestationOptions.Intermediate(
            notBefore: Date(timeIntervalSince1970: 1_577_836_800), notAfter: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(F.verify(AttestationOptions(intermediate: intermediate)).outcome == "apple_validation_failed/certificate_expired")
    }

    @Test func signaturesAreCheckedBeforeValidity() {
        let forged = try! F.otherPKI.mintAttestation(
            device: F.device, teamId: F.teamId, bundleId: F.bundleId, clientDataHash: F.clientDataHash, at: F.date)
        let later = Timestamp(seconds: 1_900_000_000)
        #expect(F.verify(F.request(forged.attestationObject), at: later).outcome == "apple_validation_failed/certificate_chain_invalid")
    }

    @Test func cachedIntermediateIsStillCheckedAgainstTheJobTime() {
        let trust = TrustConfiguration(
            attestationAnchor: try! TrustAnchor(pem: F.pki.attestationRootPEM),
            receiptAnchor: try! TrustAnchor(pem: F.pki.receiptRootPEM))
        let options = AttestationOptions(leafNotBefore: F.date, leafNotAfter: Date(timeIntervalSince1970: 2_500_000_000))
        let request = F.request(F.mint(options).attestationObject)
        #expect(F.verify(request, trust: trust).outcome == "ok")
        #expect(trust.attestation.cache.count == 1)
        #expect(F.verify(request, trust: trust).outcome == "ok")
        #expect(trust.attestation.cache.counts.hits >= 1)
        // After the PKI (intermediate and root) expire, the cached intermediate does not keep the path valid.
        #expect(F.verify(request, at: Timestamp(seconds: 2_400_000_000), trust: trust).outcome
            == "apple_validation_failed/certificate_expired")
    }

    // MARK: Steps 2–9

    @Test func nonceMustMatchTheCertificateExtension() {
        #expect(F.verify(AttestationOptions(nonce: .absent)).outcome == "apple_validation_failed/nonce_mismatch")
        #expect(F.verify(AttestationOptions(nonce: .value([UInt8](repeating: 7, count: 32)))).outcome
            == "apple_validation_failed/nonce_mismatch")
        #expect(F.verify(AttestationOptions(nonce: .extensionValue([0x04, 0x02, 0x00, 0x00]))).outcome
            == "apple_validation_failed/nonce_mismatch")
        let other = Digest.sha256.hash(Array("other".utf8))
        #expect(F.verify(F.request(F.mint().attestationObject, clientDataHash: other, challenge: nil)).outcome
            == "apple_validation_failed/nonce_mismatch")
    }

    @Test func keyIdMustBeTheHashOfTheCertifiedKey() {
        let r = F.request(F.mint().attestationObject, keyId: F.otherDevice.keyId)
        #expect(F.verify(r).outcome == "key_id_invalid/key_id_mismatch")
    }

    @Test func coseKeyMustBeTheCertifiedKey() {
        let key = CBORItem.coseKey(publicKeyX962: F.otherDevice.publicKeyX962)
        #expect(F.verify(AttestationOptions(coseKey: key)).outcome == "apple_validation_failed/public_key_mismatch")
    }

    @Test func rpIdHashMustBeTheAppId() {
        #expect(F.verify(AttestationOptions(rpIdAppId: "OTHERTEAM.com.example.catalogue")).outcome
            == "apple_validation_failed/rp_id_mismatch")
        var r = F.request(F.mint().attestationObject)
        r.bundleId = "com.example.other"
        #expect(F.verify(r).outcome == "apple_validation_failed/rp_id_mismatch")
    }

    @Test func counterMustBeZero() {
        #expect(F.verify(AttestationOptions(counter: 1)).outcome == "apple_validation_failed/counter_not_zero")
    }

    @Test func aaguidMustNameAnEnvironment() {
        #expect(F.verify(AttestationOptions(aaguid: [UInt8](repeating: 0, count: 16))).outcome
            == "apple_validation_failed/aaguid_invalid")
        #expect(F.verify(AttestationOptions(aaguid: Array("appattestdevelo".utf8) + [0])).outcome
            == "apple_validation_failed/aaguid_invalid")
    }

    @Test func environmentPolicyIsApplied() throws {
        let development = AttestationOptions(environment: .development)
        #expect(F.verify(development).outcome == "apple_validation_failed/environment_not_allowed")
        #expect(try F.verify(development, policy: .development).get().environment == .development)
        #expect(try F.verify(development, policy: .any).get().environment == .development)
        #expect(F.verify(AttestationOptions(), policy: .development).outcome == "apple_validation_failed/environment_not_allowed")
    }

    @Test func credentialIdMustBeTheKeyId() {
        #expect(F.verify(AttestationOptions(credentialId: F.otherDevice.keyId)).outcome
            == "apple_validation_failed/credential_id_mismatch")
    }

    @Test func firstFailingStepDecides() {
        // Wrong counter and wrong aaguid: step 7 comes before step 8.
        #expect(F.verify(AttestationOptions(counter: 5, aaguid: [UInt8](repeating: 1, count: 16))).outcome
            == "apple_validation_failed/counter_not_zero")
        // Missing receipt and wrong credentialId: step 9 comes before the receipt.
        #expect(F.verify(AttestationOptions(credentialId: F.otherDevice.keyId, receipt: .absent)).outcome
            == "apple_validation_failed/credential_id_mismatch")
    }

    // MARK: The receipt

    private func receipt(_ options: ReceiptOptions) -> String {
        F.verify(AttestationOptions(receipt: .signed(options))).outcome
    }

    @Test func receiptMustBePresentAndCMS() {
        #expect(F.verify(AttestationOptions(receipt: .absent)).outcome == "apple_validation_failed/receipt_invalid")
        #expect(F.verify(AttestationOptions(receipt: .raw([0x30, 0x03, 0x02, 0x01, 0x01]))).outcome
            == "apple_validation_failed/receipt_invalid")
        #expect(F.verify(AttestationOptions(receipt: .raw(Array("not a receipt".utf8)))).outcome
            == "apple_validation_failed/receipt_invalid")
    }

    @Test func receiptSignatureMustVerify() {
        #expect(receipt(ReceiptOptions(corruptSignature: true)) == "apple_validation_failed/receipt_invalid")
        #expect(receipt(ReceiptOptions(signedAttributes: .valid)) == "ok")
        #expect(receipt(ReceiptOptions(signedAttributes: .wrongMessageDigest)) == "apple_validation_failed/receipt_invalid")
    }

    @Test func receiptMustChainToThePinnedReceiptRoot() {
        #expect(receipt(ReceiptOptions(signingPKI: F.otherPKI)) == "apple_validation_failed/receipt_invalid")
        #expect(receipt(ReceiptOptions(includeRootCertificate: false)) == "ok")
        let expired = ReceiptOptions.Signer(
            notBefore: Date(timeIntervalSince1970: 1_577_836_800), notAfter: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(receipt(ReceiptOptions(signer: expired)) == "apple_validation_failed/receipt_invalid")
    }

    @Test func receiptSignerMustCarryAppleMarker() {
        let unmarked = ReceiptOptions.Signer(
            notBefore: Date(timeIntervalSince1970: 1_577_836_800), notAfter: Date(timeIntervalSince1970: 2_300_000_000),
            marker: false)
        #expect(receipt(ReceiptOptions(signer: unmarked)) == "apple_validation_failed/receipt_invalid")
    }

    @Test func receiptFieldsMustNameThisAppKeyAndType() {
        #expect(receipt(ReceiptOptions(appId: "OTHER.com.example.catalogue")) == "apple_validation_failed/receipt_invalid")
        let otherLeaf = try! F.pki.mintAttestation(
            device: F.otherDevice, teamId: F.teamId, bundleId: F.bundleId, clientDataHash: F.clientDataHash, at: F.date
        ).leafDER
        #expect(receipt(ReceiptOptions(credentialCertificate: otherLeaf)) == "apple_validation_failed/receipt_invalid")
        #expect(receipt(ReceiptOptions(type: "RECEIPT")) == "apple_validation_failed/receipt_invalid")
        for field in [2, 3, 6] {
            #expect(receipt(ReceiptOptions(omittedFields: [field])) == "apple_validation_failed/receipt_invalid", "field \(field)")
        }
        // Fields 4, 7, 12 and 21 are reported, not enforced.
        #expect(receipt(ReceiptOptions(omittedFields: [4, 7, 12, 21])) == "ok")
    }

    @Test func receiptRiskMetricIsReported() throws {
        let verified = try F.verify(AttestationOptions(receipt: .signed(ReceiptOptions(riskMetric: 4)))).get()
        #expect(verified.receipt.riskMetric == 4)
    }
}
