import AttestCrypto

/// A simulated App Attest key: the P-256 key pair the Secure Enclave holds for one app instance.
public struct Device: Sendable {
    let key: ECKey
    /// SHA-256 of the uncompressed public key: the keyId the app reports.
    public let keyId: [UInt8]

    /// The uncompressed public point 04 ‖ x ‖ y (65 bytes).
    public var publicKeyX962: [UInt8] { key.publicKeyX962 }

    /// A device with a fresh random key.
    public init() throws(MintError) {
        key = try ECKey.generate(.p256)
        keyId = Digest.sha256.hash(key.publicKeyX962)
    }
}
