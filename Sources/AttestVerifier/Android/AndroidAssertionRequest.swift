/// A request an attested Android key signed: the bytes it signed and the signature, as a job carries them.
public struct AndroidAssertionRequest: Sendable {
    /// Base64 SHA-256 of the attested key's SubjectPublicKeyInfo.
    public var keyId: String
    /// Base64 of the signature: DER ECDSA for an EC key, PKCS #1 v1.5 or PSS for an RSA key, over SHA-256.
    public var signature: String
    /// Base64 of the exact bytes the key signed.
    public var clientData: String
    /// The single-use challenge, which must occur in the client data (nil: the backend binds it itself).
    public var challenge: String?

    public init(keyId: String, signature: String, clientData: String, challenge: String?) {
        self.keyId = keyId
        self.signature = signature
        self.clientData = clientData
        self.challenge = challenge
    }
}
