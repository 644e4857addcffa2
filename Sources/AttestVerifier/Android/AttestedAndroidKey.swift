import AttestCore
import AttestCrypto

/// An attested Android key as a store keeps it: its SubjectPublicKeyInfo, the keyId it hashes to, and the
/// key parsed once when it is of an algorithm this build verifies with (nil: ML-DSA on OpenSSL 3.0, an RSA
/// key under 2048 bits). Made once per stored key, so a device's requests pay neither the parse nor the
/// hash of its key, as Apple assertions do not.
public struct AttestedAndroidKey: Sendable {
    public let subjectPublicKeyInfo: [UInt8]
    /// SHA-256 of ``subjectPublicKeyInfo``.
    public let keyId: [UInt8]
    public let key: SignatureKey?

    public init(subjectPublicKeyInfo: [UInt8]) {
        self.subjectPublicKeyInfo = subjectPublicKeyInfo
        keyId = Digest.sha256.hash(subjectPublicKeyInfo)
        key = SubjectPublicKeyInfo.algorithm(of: subjectPublicKeyInfo).flatMap {
            SignatureKey(subjectPublicKeyInfo: subjectPublicKeyInfo, algorithm: $0)
        }
    }
}
