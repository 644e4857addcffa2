import AttestCore
import AttestMint
import AttestVerifier
import Foundation
import Testing

/// An app can make its attested key sign any bytes (a Keystore signing key signs what the app gives it), so
/// a genuine leaf's key could sign a forged certificate beneath it, with a KeyDescription of the app's
/// choosing and a key of the attacker's. The leaf's own issuer may be an end entity (real Sony chains), so
/// what refuses that chain is that no certificate above the leaf may carry a KeyDescription.
@Suite struct AndroidAttestedKeyAsIssuerTests {
    static let pki = try! AndroidTestPKI.generate(
        validFrom: Date(timeIntervalSince1970: 1_577_836_800), validUntil: Date(timeIntervalSince1970: 2_366_841_600))
    static let trust = try! AndroidTrust(rootCertificatesPEM: pki.rootPEM)
    static let time = Timestamp(seconds: 1_777_000_000)
    static let policy = AndroidPolicy(
        packageName: "com.example.catalogue", signingCertificateDigests: [AndroidAttestationOptions.defaultSigningCertificateDigest])

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let count = content.count
        let length: [UInt8] = count < 0x80 ? [UInt8(count)] : count < 0x100 ? [0x81, UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xff)]
        return [tag] + length + content
    }

    /// A certificate under `issuer` for `subjectKey`, carrying `extensions` as they are, signed ECDSA-SHA256
    /// by `signer`: what an app could build with its attested key.
    static func forged(
        under issuer: Certificate, subjectKey: AndroidDeviceKey, extensions: [CertificateExtension], signer: AndroidDeviceKey
    ) throws -> [UInt8] {
        let algorithm = tlv(0x30, tlv(0x06, OID.ecdsaWithSHA256.encoded))
        let validity = tlv(0x30, tlv(0x17, Array("700101000000Z".utf8)) + tlv(0x18, Array("20480101000000Z".utf8)))
        let encodedExtensions = extensions.map { ext in
            tlv(0x30, tlv(0x06, ext.oid.encoded) + (ext.critical ? [0x01, 0x01, 0xFF] : []) + tlv(0x04, ext.value))
        }
        let tbs = tlv(
            0x30,
            tlv(0xA0, [0x02, 0x01, 0x02]) + [0x02, 0x01, 0x01] + algorithm + issuer.subject + validity + issuer.subject
                + subjectKey.subjectPublicKeyInfo + tlv(0xA3, tlv(0x30, encodedExtensions.flatMap { $0 })))
        let signature = try signer.sign(message: tbs)
        return tlv(0x30, tbs + algorithm + tlv(0x03, [0x00] + signature))
    }

    @Test func anAttestedKeyCannotCertifyAForgedLeaf() throws {
        let device = try AndroidDeviceKey()
        let attacker = try AndroidDeviceKey()
        let minted = try Self.pki.mintAttestation(options: AndroidAttestationOptions(deviceKey: device))
        let verifier = AndroidAttestationVerifier(trust: Self.trust)
        let genuine = AndroidAttestationRequest(certificateChain: minted.certificateChain, challenge: minted.challenge)
        #expect(try verifier.verify(genuine, policy: Self.policy, at: Self.time).get().keyId == minted.keyId)
        // The attacker's key beneath the genuine leaf, with the genuine KeyDescription (same challenge, same app).
        let leaf = try Certificate(der: minted.der(.leaf))
        let forged = try Self.forged(under: leaf, subjectKey: attacker, extensions: leaf.extensions, signer: device)
        #expect(try Certificate(der: forged).issuer == leaf.subject)
        let attack = AndroidAttestationRequest(certificateChain: [Base64.encode(forged)] + minted.certificateChain, challenge: minted.challenge)
        switch verifier.verify(attack, policy: Self.policy, at: Self.time) {
        case .success(let verified): Issue.record("the attacker's key was attested: \(verified.keyId)")
        case .failure(let failure): #expect(failure.reason == .certificateChainInvalid, "\(failure)")
        }
    }

    @Test func aKeyDescriptionAboveTheLeafIsRefusedWherever() throws {
        let minted = try Self.pki.mintAttestation(options: AndroidAttestationOptions())
        let description = try #require(minted.keyDescription)
        let carried = RawExtension(oid: OID.androidKeyDescription.description, critical: false, value: description)
        for reissue in [\AndroidAttestationOptions.attestationKeyCertificate, \.intermediate] {
            var options = AndroidAttestationOptions()
            options[keyPath: reissue] = AndroidAttestationOptions.Reissue(extraExtensions: [carried])
            let chain = try Self.pki.mintAttestation(options: options)
            let result = AndroidAttestationVerifier(trust: Self.trust).verify(
                AndroidAttestationRequest(certificateChain: chain.certificateChain, challenge: chain.challenge), policy: Self.policy, at: Self.time)
            if case .failure(let failure) = result {
                #expect(failure.reason == .certificateChainInvalid, "\(reissue): \(failure)")
            } else {
                Issue.record("\(reissue): a KeyDescription above the leaf was accepted")
            }
        }
    }
}

/// Integer tags hold the device's unsigned 32- and 64-bit values: a user secure id above Int64's range and
/// a date of Long.MAX_VALUE milliseconds are read (and reported), a negative or longer integer is not.
@Suite struct AndroidUnsignedTagTests {
    static func verify(_ authorizations: [AndroidAttestationOptions.Authorization]) throws -> Result<VerifiedAndroidAttestation, VerificationFailure> {
        let minted = try AndroidAttestedKeyAsIssuerTests.pki.mintAttestation(options: AndroidAttestationOptions(extraAuthorizations: authorizations))
        return AndroidAttestationVerifier(trust: AndroidAttestedKeyAsIssuerTests.trust).verify(
            AndroidAttestationRequest(certificateChain: minted.certificateChain, challenge: minted.challenge),
            policy: AndroidAttestedKeyAsIssuerTests.policy, at: AndroidAttestedKeyAsIssuerTests.time)
    }

    @Test func sixtyFourBitValuesAreRead() throws {
        let secureId: [UInt8] = [0x02, 0x09, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xF0]
        let longMax: [UInt8] = [0x02, 0x08, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        let verified = try Self.verify([.init(tag: 502, value: secureId), .init(tag: 402, value: longMax, hardwareEnforced: false)]).get()
        #expect(verified.keyDescription.hardwareEnforced[.userSecureId] == .unsigned(0xFFFF_FFFF_FFFF_FFF0))
        #expect(verified.keyDescription.softwareEnforced.integer(.usageExpireDateTime) == Int(Int64.max))
    }

    @Test func negativeOrLongerIntegersAreRefused() throws {
        for value: [UInt8] in [[0x02, 0x01, 0xFF], [0x02, 0x0A, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0x02, 0x09, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]] {
            guard case .failure(let failure) = try Self.verify([.init(tag: 502, value: value)]) else {
                Issue.record("\(value) accepted")
                continue
            }
            #expect(failure.reason == .keyDescriptionInvalid, "\(value)")
        }
    }
}
