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

extension AttestStore {
    /// A batch's gather in one round trip: every statement pipelined, each looking rows up by key, so the
    /// batch pays one trip's latency whatever it holds. The reads see the database as of their own
    /// statements; the claim settles as ``consumeChallenges(_:)`` would (retried whole, it settles the same
    /// way: a challenge a job holds stays that job's).
    public func gather(_ request: GatherRequest) throws(PGError) -> Gathered {
        var pipeline = PGPipeline()
        let verdicts = pipeline.append(VerdictsTable.Stored(jobs: request.jobs))
        let devices = pipeline.append(DevicesTable.ByKeys(keyIds: request.keyIds))
        let query = request.intelligence
        let intelligence = query.isEmpty ? nil : (
            pipeline.append(DeviceRiskTable.Histories(Array(query.devices))), pipeline.append(MonthlyCountsTable.Counted(Array(query.counted))),
            pipeline.append(MonthlyCountsTable.Quotas(Array(query.months)))
        )
        let claims = request.claims.isEmpty ? nil : pipeline.append(ChallengesTable.Consume(request.claims))
        let results = try connection.run { c throws(PGError) in try c.pipeline(pipeline) }
        return Gathered(
            verdicts: Dictionary(results[verdicts].map { ($0.job, $0.verdict) }, uniquingKeysWith: { _, last in last }),
            devices: Dictionary(results[devices].map { ($0.keyId, $0) }, uniquingKeysWith: { _, last in last }),
            intelligence: intelligence.map { Self.snapshot(results[$0.0], results[$0.1], results[$0.2]) } ?? IntelligenceSnapshot(),
            challenges: claims.map { results[$0] } ?? [:])
    }
}
