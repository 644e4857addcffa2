import AttestCore
import AttestJobs
import DeviceIntelligence
import PostgresClient

/// What a batch reads before deciding, asked for at once: the verdicts stored for its jobs, the devices of
/// its keys, the risk histories, monthly counts and quotas of the identities it expects, and the
/// worker-issued challenges its jobs claim (a claim is a write, and the only one before the commit).
public struct GatherRequest: Sendable {
    public var jobs: [ScopedJobId]
    public var keyIds: [[UInt8]]
    public var intelligence: IntelligenceQuery
    /// At most one claim per jobId (``ChallengeStore/consume(_:on:)`` settles by jobId).
    public var claims: [ChallengeClaim]

    public init(jobs: [ScopedJobId], keyIds: [[UInt8]], intelligence: IntelligenceQuery = IntelligenceQuery(), claims: [ChallengeClaim] = []) {
        self.jobs = jobs
        self.keyIds = keyIds
        self.intelligence = intelligence
        self.claims = claims
    }
}

/// The answer to a ``GatherRequest``.
public struct Gathered: Sendable {
    public var verdicts: [ScopedJobId: StoredVerdict]
    public var devices: [[UInt8]: DeviceRecord]
    public var intelligence: IntelligenceSnapshot
    /// Each claim's outcome, by jobId.
    public var challenges: [String: ChallengeOutcome]

    public init(
        verdicts: [ScopedJobId: StoredVerdict], devices: [[UInt8]: DeviceRecord], intelligence: IntelligenceSnapshot,
        challenges: [String: ChallengeOutcome]
    ) {
        self.verdicts = verdicts
        self.devices = devices
        self.intelligence = intelligence
        self.challenges = challenges
    }
}
