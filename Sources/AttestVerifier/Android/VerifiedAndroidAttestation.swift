import AttestCore

/// An accepted Android attestation: the attested key and what the secure hardware stated about it and
/// the device.
public struct VerifiedAndroidAttestation: Sendable {
    /// Base64 SHA-256 of the leaf's SubjectPublicKeyInfo: the device key's id.
    public let keyId: String
    /// The attested key's SubjectPublicKeyInfo DER, stored to verify the device's signed requests.
    public let subjectPublicKeyInfo: [UInt8]
    public let keyDescription: KeyDescription
    /// The instant the chain was checked against (the job's receivedAt).
    public let verificationTime: Timestamp
}
