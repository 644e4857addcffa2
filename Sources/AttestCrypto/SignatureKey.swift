import AttestCore

/// A public key of a kind certificates in Android attestation chains carry and this project can verify
/// with: EC (P-256, P-384) or RSA. Keys of other algorithms (ML-DSA leaves, on OpenSSL 3.0) have none.
///
/// A struct of two optional references rather than an enum of two class payloads: Swift keeps such an
/// enum's case in spare bits of the pointer, which LeakSanitizer does not recognise as a reference, so a
/// key held by a long-lived cache would be reported as leaked at exit.
public struct SignatureKey: Sendable {
    /// The EC key, or nil for an RSA key.
    public let ec: ECPublicKey?
    /// The RSA key, or nil for an EC key.
    public let rsa: RSAPublicKey?

    /// From a DER SubjectPublicKeyInfo; nil when it is neither a usable EC nor RSA key.
    public init?(subjectPublicKeyInfo der: [UInt8], algorithm: OID) {
        switch algorithm {
        case .ecPublicKey:
            guard let key = ECPublicKey(subjectPublicKeyInfo: der) else { return nil }
            (ec, rsa) = (key, nil)
        case .rsaEncryption:
            guard let key = RSAPublicKey(subjectPublicKeyInfo: der) else { return nil }
            (ec, rsa) = (nil, key)
        default:
            return nil
        }
    }

    /// Verifies a certificate's signature over its TBS bytes: ECDSA with an EC key, PKCS #1 v1.5 with an
    /// RSA key, the digest the algorithm names; any other pairing is refused.
    public func verify(certificateSignature signature: [UInt8], over tbs: some Collection<UInt8>, algorithm: OID) -> Bool {
        guard let digest = Digest(signatureAlgorithm: algorithm) else { return false }
        let isECDSA = Digest(ecdsaSignatureAlgorithm: algorithm) != nil
        if let ec { return isECDSA && ec.verify(signature: signature, message: tbs, digest: digest) }
        if let rsa { return !isECDSA && rsa.verify(signature: signature, message: tbs, digest: digest) }
        return false
    }

    /// Verifies a request an Android app signed with this key over SHA-256 (`SHA256withECDSA`,
    /// `SHA256withRSA` or `SHA256withRSA/PSS`, the signatures KeyStore keys make): DER ECDSA with an EC key;
    /// PKCS #1 v1.5, then PSS, with an RSA key (both are the key holder's; neither can be made without it).
    public func verify(requestSignature signature: [UInt8], over message: [UInt8]) -> Bool {
        if let ec { return ec.verify(signature: signature, message: message, digest: .sha256) }
        guard let rsa else { return false }
        let digest = Digest.sha256.hash(message)
        return rsa.verify(signature: signature, digest: digest, algorithm: .sha256)
            || rsa.verify(signature: signature, digest: digest, algorithm: .sha256, padding: .pss)
    }
}
