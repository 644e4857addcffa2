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
