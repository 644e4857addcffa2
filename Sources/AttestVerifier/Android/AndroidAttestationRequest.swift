import AttestCore
import AttestCrypto

/// An Android key attestation as a job carries it: the chain `KeyStore.getCertificateChain` returned and
/// the challenge the app passed to `setAttestationChallenge`.
public struct AndroidAttestationRequest: Sendable {
    /// Base64 DER certificates, leaf first, root last.
    public var certificateChain: [String]
    /// Base64 of the exact challenge bytes.
    public var challenge: String

    public init(certificateChain: [String], challenge: String) {
        self.certificateChain = certificateChain
        self.challenge = challenge
    }
}

extension AndroidAttestationRequest {
    /// SHA-256 of the leaf's SubjectPublicKeyInfo: the keyId the key has once its attestation is verified,
    /// read before verifying so a key's jobs can be keyed and ordered by it; nil when the leaf does not parse.
    public var leafKeyId: [UInt8]? {
        guard let first = certificateChain.first,
            first.utf8.count <= (AndroidAttestationVerifier.maxCertificateBytes + 2) / 3 * 4 + 2,
            let der = Base64.decode(first), let leaf = try? Certificate(der: der)
        else { return nil }
        return Digest.sha256.hash(leaf.subjectPublicKeyInfo)
    }
}
