import AttestCore
import AttestCrypto
import Foundation

/// The certificate authorities of an Android key attestation chain, under test keys: a Google-shaped root
/// (P-384, self-signed, like "Key Attestation CA1"), an OEM or remote-key-provisioning intermediate (P-256, CA)
/// and the device's attestation key certificate (P-256), which signs the leaf the keystore makes per key.
///
/// Keys are created once and reused for every minted chain, which keeps minting fast enough for load
/// generation. Two PKIs made by `generate` have identical names but different keys: the "same names, other
/// root" fault a verifier pinning root keys must reject.
public final class AndroidTestPKI: Sendable {
    let root: CertifiedKey
    let intermediate: CertifiedKey
    let attestationKey: CertifiedKey
    /// Whether the attestation key certificate is a CA (RKP) or an end entity (Sony's factory keys).
    public let attestationKeyIsCA: Bool
    /// The validity every authority certificate was issued with.
    public let validFrom: Date
    public let validUntil: Date

    public var rootDER: [UInt8] { root.certificate }
    public var intermediateDER: [UInt8] { intermediate.certificate }
    public var attestationKeyDER: [UInt8] { attestationKey.certificate }

    /// The root to pin, for `AndroidTrust(rootCertificatesPEM:)` or the worker's Android roots setting.
    public var rootPEM: String { PEM.encode(root.certificate, label: "CERTIFICATE") }

    private init(
        root: CertifiedKey, intermediate: CertifiedKey, attestationKey: CertifiedKey, attestationKeyIsCA: Bool, validFrom: Date,
        validUntil: Date
    ) {
        self.root = root
        self.intermediate = intermediate
        self.attestationKey = attestationKey
        self.attestationKeyIsCA = attestationKeyIsCA
        self.validFrom = validFrom
        self.validUntil = validUntil
    }

    /// New keys and certificates, all valid from `validFrom` to `validUntil`.
    ///
    /// - Parameter attestationKeyIsCA: false issues the attestation key certificate as an end entity
    ///   (`CA:FALSE`, digitalSignature), as Sony's factory-provisioned keys are; true as a CA, as RKP keys are.
    public static func generate(validFrom: Date, validUntil: Date, attestationKeyIsCA: Bool = true) throws(MintError) -> AndroidTestPKI {
        let rootKey = try ECKey.generate(.p384)
        let rootTemplate = CertificateTemplate.androidAuthority(
            subject: rootName, key: rootKey, notBefore: validFrom, notAfter: validUntil, isCA: true)
        let root = try CertifiedKey(key: rootKey, certificate: rootTemplate.signed(by: rootKey, issuerName: rootName, hash: .sha384))

        let intermediateKey = try ECKey.generate(.p256)
        let intermediate = try CertifiedKey(key: intermediateKey, certificate: root.issue(
            .androidAuthority(subject: intermediateName, key: intermediateKey, notBefore: validFrom, notAfter: validUntil, isCA: true),
            hash: .sha384))

        let attestationKeyKey = try ECKey.generate(.p256)
        let attestationKey = try CertifiedKey(key: attestationKeyKey, certificate: intermediate.issue(
            .androidAuthority(
                subject: attestationKeyName, key: attestationKeyKey, notBefore: validFrom, notAfter: validUntil,
                isCA: attestationKeyIsCA),
            hash: .sha256))
        return AndroidTestPKI(
            root: root, intermediate: intermediate, attestationKey: attestationKey, attestationKeyIsCA: attestationKeyIsCA,
            validFrom: validFrom, validUntil: validUntil)
    }

    static let rootName = CertificateTemplate.name([
        (.commonName, "AttestMint Key Attestation CA1"), (.organizationalUnitName, "Android"),
        (.organizationName, CertificateTemplate.organization), (.countryName, "US"),
    ])
    static let intermediateName = CertificateTemplate.name([
        (.commonName, "AttestMint Droid CA3"), (.organizationName, CertificateTemplate.organization),
    ])
    static let attestationKeyName = CertificateTemplate.name([
        (.commonName, "AttestMint Attestation Key"), (.organizationName, "TEE"),
    ])
    /// The subject of every key the Android keystore attests.
    static let leafName = CertificateTemplate.name([(.commonName, "Android Keystore Key")])
}

extension CertificateTemplate {
    /// An Android chain authority: critical basicConstraints CA:TRUE and keyUsage digitalSignature |
    /// keyCertSign | cRLSign, like Google's roots and intermediates; `isCA: false` writes an end entity
    /// (`CA:FALSE`, digitalSignature), like Sony's attestation key certificates. Both with a
    /// subjectKeyIdentifier.
    static func androidAuthority(
        subject: [UInt8], key: ECKey, notBefore: Date, notAfter: Date, isCA: Bool, pathLength: Int? = nil, keyUsage: [UInt8]? = nil,
        extraExtensions: [RawExtension] = []
    ) -> CertificateTemplate {
        CertificateTemplate(
            subject: subject, subjectPublicKeyInfo: key.subjectPublicKeyInfo, notBefore: notBefore, notAfter: notAfter,
            extensions: [.basicConstraints(isCA: isCA, pathLength: isCA ? pathLength : nil),
                         .keyUsage(keyUsage ?? (isCA ? [0x01, 0x86] : [0x07, 0x80])),
                         .subjectKeyIdentifier(key.subjectKeyIdentifier)] + extraExtensions)
    }
}

/// A simulated Android Keystore key: the key pair the TEE or StrongBox generated for one app, which the
/// minted leaf certifies and which signs the app's requests (`SHA256withECDSA`).
public struct AndroidDeviceKey: Sendable {
    public enum Curve: Sendable { case p256, p384 }

    let key: ECKey

    /// A fresh random key.
    public init(curve: Curve = .p256) throws(MintError) {
        key = try ECKey.generate(curve == .p256 ? .p256 : .p384)
    }

    public var curve: Curve { key.curve == .p256 ? .p256 : .p384 }

    /// The SubjectPublicKeyInfo DER the leaf carries (what the worker stores for the key).
    public var subjectPublicKeyInfo: [UInt8] { key.subjectPublicKeyInfo }

    /// Base64 SHA-256 of the SubjectPublicKeyInfo: the keyId the verifier reports and assertions name.
    public var keyId: String { Base64.encode(Digest.sha256.hash(key.subjectPublicKeyInfo)) }

    /// A DER ECDSA signature over SHA-256 of `message`, as `Signature.getInstance("SHA256withECDSA")` makes.
    public func sign(message: [UInt8]) throws(MintError) -> [UInt8] {
        try key.sign(digest: Digest.sha256.hash(message))
    }
}
