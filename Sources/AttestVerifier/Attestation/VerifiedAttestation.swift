import AttestCore
import AttestCrypto

/// An attestation that passed every check. Only `AttestationVerifier` creates one, so only verified keys
/// can be stored as a device's key.
public struct VerifiedAttestation: Sendable {
    public let keyId: [UInt8]
    /// The attested key as an X9.62 uncompressed point.
    public let publicKey: [UInt8]
    /// The same key imported once, ready to verify the device's assertions.
    public let key: ECPublicKey
    public let environment: AppAttestEnvironment
    public let counter: UInt32
    public let receipt: Receipt
    public let extensions: AppleExtensions?
    /// The instant the certificates were checked against (the job's receivedAt).
    public let verificationTime: Timestamp
}
