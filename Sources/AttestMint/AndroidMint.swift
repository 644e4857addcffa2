import AttestCore
import AttestCrypto
import Foundation

/// A minted Android key attestation: the chain an app sends and the key it certifies, so a test can sign the
/// app's requests with it, and the parts, so a test can recombine them.
public struct MintedAndroidAttestation: Sendable {
    /// Base64 DER certificates in the options' `chainOrder` (leaf first, root last by default): what an
    /// `AndroidAttestationRequest.certificateChain` takes.
    public let certificateChain: [String]
    /// Base64 of the challenge the KeyDescription carries: what `AndroidAttestationRequest.challenge` takes.
    public let challenge: String
    /// The certificates by position, whatever the order sent: leaf, attestation key, intermediate, root.
    public let certificates: [[UInt8]]
    /// The leaf's KeyDescription extnValue; nil when the options left the extension out.
    public let keyDescription: [UInt8]?
    /// The attested key.
    public let deviceKey: AndroidDeviceKey

    public func der(_ position: AndroidAttestationOptions.Position) -> [UInt8] { certificates[position.rawValue] }
    /// Base64 SHA-256 of the leaf's SubjectPublicKeyInfo.
    public var keyId: String { deviceKey.keyId }
}

extension AndroidTestPKI {
    /// Mints what `KeyStore.getCertificateChain` returns for a key generated with an attestation challenge:
    /// a leaf certifying the device key (subject "Android Keystore Key", keyUsage digitalSignature, the
    /// KeyDescription), signed with the attestation key, then the attestation key, intermediate and root
    /// certificates. The options' faults are applied in that order, the signature tampering last.
    public func mintAttestation(
        options: AndroidAttestationOptions = AndroidAttestationOptions()
    ) throws(MintError) -> MintedAndroidAttestation {
        let deviceKey: AndroidDeviceKey
        if let given = options.deviceKey { deviceKey = given } else { deviceKey = try AndroidDeviceKey() }

        var rootDER = root.certificate
        if let reissue = options.root {
            rootDER = try reissued(reissue, of: root, isCA: true).signed(by: root.key, issuerName: root.subjectName, hash: .sha384)
        }
        var intermediateDER = intermediate.certificate
        if let reissue = options.intermediate {
            intermediateDER = try root.issue(reissued(reissue, of: intermediate, isCA: true), hash: .sha384)
        }
        var attestationKeyDER = attestationKey.certificate
        if let reissue = options.attestationKeyCertificate {
            attestationKeyDER = try intermediate.issue(reissued(reissue, of: attestationKey, isCA: attestationKeyIsCA), hash: .sha256)
        }

        let encoded = AndroidKeyDescription.encode(options, curve: deviceKey.curve)
        let keyDescription: [UInt8]? = switch options.keyDescription {
        case .encoded: encoded
        case .absent: nil
        case .value(let bytes): bytes
        case .transformed(let transform): transform(encoded)
        }
        let leafTemplate = CertificateTemplate(
            subject: Self.leafName, subjectPublicKeyInfo: deviceKey.subjectPublicKeyInfo, notBefore: options.leafNotBefore,
            notAfter: options.leafNotAfter,
            extensions: [.keyUsage([0x07, 0x80])]
                + (keyDescription.map { [RawExtension(oid: .androidKeyDescription, critical: false, value: $0)] } ?? [])
                + options.leafExtraExtensions)
        let leafDER = try attestationKey.issue(leafTemplate, hash: .sha256, authorityKeyIdentifier: false)

        var certificates = [leafDER, attestationKeyDER, intermediateDER, rootDER]
        if let position = options.tamperedSignature {
            // The last byte of a certificate is the last byte of its signature's s: the DER stays valid.
            let last = certificates[position.rawValue].count - 1
            certificates[position.rawValue][last] ^= 0x01
        }
        return MintedAndroidAttestation(
            certificateChain: options.chainOrder.map { Base64.encode(certificates[$0.rawValue]) },
            challenge: Base64.encode(options.challenge), certificates: certificates, keyDescription: keyDescription,
            deviceKey: deviceKey)
    }

    /// `authority`'s certificate template again, with the reissue's changes.
    private func reissued(_ reissue: AndroidAttestationOptions.Reissue, of authority: CertifiedKey, isCA: Bool) -> CertificateTemplate {
        .androidAuthority(
            subject: authority.subjectName, key: authority.key, notBefore: reissue.notBefore ?? validFrom,
            notAfter: reissue.notAfter ?? validUntil, isCA: reissue.isCA ?? isCA, pathLength: reissue.pathLength,
            keyUsage: reissue.keyUsage, extraExtensions: reissue.extraExtensions)
    }
}
