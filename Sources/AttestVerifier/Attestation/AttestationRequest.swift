import AttestCore
/// What a backend sends to have an attestation verified, with fields as they arrived (base64 text), so
/// that decoding failures are verification outcomes with their own reasons.
public struct AttestationRequest: Sendable {
    public var teamId: String
    public var bundleId: String
    public var keyId: String
    public var attestationObject: String
    public var clientDataHash: String
    /// The challenge as issued, when the job carries it; then `clientDataHash` must bind it.
    public var challenge: String?

    public init(
        teamId: String, bundleId: String, keyId: String, attestationObject: String, clientDataHash: String,
        challenge: String? = nil
    ) {
        self.teamId = teamId
        self.bundleId = bundleId
        self.keyId = keyId
        self.attestationObject = attestationObject
        self.clientDataHash = clientDataHash
        self.challenge = challenge
    }

    public var appId: String { teamId + "." + bundleId }
}
