import AttestCore
import AttestJobs

/// A challenge the worker issued for an app (`POST /v1/challenges`, `attest-worker challenge new`): what the
/// app must bind into its client data, and until when a job may present it.
public struct IssuedChallenge: Sendable, Equatable {
    /// 32 bytes from the CSPRNG; the primary key of `challenges`.
    public var bytes: [UInt8]
    public var teamId: String
    public var bundleId: String
    /// A job whose receivedAt is earlier than this minus the maximum future skew is backdated: it gets
    /// `challenge_expired`/`challenge_not_yet_issued` and does not consume the challenge.
    public var issuedAt: Timestamp
    /// A job whose receivedAt is later gets `challenge_expired`.
    public var expiresAt: Timestamp

    public init(bytes: [UInt8], teamId: String, bundleId: String, issuedAt: Timestamp, expiresAt: Timestamp) {
        self.bytes = bytes
        self.teamId = teamId
        self.bundleId = bundleId
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }

    /// What the app receives, and what jobs carry back in `challenge`.
    public var text: String { Base64.encode(bytes) }

    /// The issuance response body: `{"challenge", "expiresAt", "teamId", "bundleId"}`.
    public var json: JSONValue {
        .object([
            ("challenge", .string(text)), ("expiresAt", .string(expiresAt.rfc3339)), ("teamId", .string(teamId)),
            ("bundleId", .string(bundleId)),
        ])
    }
}
