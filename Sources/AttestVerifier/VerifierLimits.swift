/// Input bounds (CONTRACT 7 defaults): objects over them are rejected before any parsing.
public struct VerifierLimits: Sendable {
    public var maxAttestationObjectBytes = 64 * 1024
    public var maxAssertionBytes = 4 * 1024
    public var maxCBORDepth = 16
    /// Issued challenges are 32 bytes (44 in base64); the bound keeps the binding search's cost a small
    /// multiple of clientData's size and the claim a worker sends to PostgreSQL small.
    public var maxChallengeBytes = 512

    public init() {}

    /// Why `challenge` is refused before anything else reads it: over ``maxChallengeBytes`` (UTF-8).
    public func challengeFailure(_ challenge: String?) -> VerificationFailure? {
        guard let challenge, challenge.utf8.count > maxChallengeBytes else { return nil }
        return VerificationFailure(.challengeInvalid, .tooLarge, "challenge over \(maxChallengeBytes) bytes")
    }
}
