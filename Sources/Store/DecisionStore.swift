import AttestJobs
import DeviceIntelligence
import PostgresClient

/// What the batch processor needs from storage; `AttestStore` is the PostgreSQL one, tests use fakes.
public protocol DecisionStore: Sendable {
    func apps() throws(PGError) -> [AppIdentity: AppPolicy]
    func prefetch(jobs: [ScopedJobId], keyIds: [[UInt8]]) throws(PGError) -> (verdicts: [ScopedJobId: StoredVerdict], devices: [[UInt8]: DeviceRecord])
    func intelligence(_ query: IntelligenceQuery) throws(PGError) -> IntelligenceSnapshot
    /// `prefetch`, `intelligence` and `consumeChallenges` together: one round trip where the store can
    /// pipeline them (``GatherRequest``).
    func gather(_ request: GatherRequest) throws(PGError) -> Gathered
    func commit(_ decisions: [Decision]) throws(PGError) -> (outcomes: [CommitOutcome], crossings: [QuotaCrossing])
    /// Settles worker-issued challenges by jobId, one round trip for the batch (see ``ChallengeStore``).
    func consumeChallenges(_ claims: [ChallengeClaim]) throws(PGError) -> [String: ChallengeOutcome]
    /// Stops retrying transient failures for good (shutdown): later calls throw `.cancelled` unless the
    /// database serves them at once.
    func cancelRetries()
    /// The time spent in the database since the last call (the batch loop's, after each batch), for
    /// `attest_batch_database_seconds`.
    func takeDatabaseTime() -> Duration
}

extension DecisionStore {
    /// Stores that do not retry have nothing to cancel.
    public func cancelRetries() {}
    /// Stores without a database take no time in one.
    public func takeDatabaseTime() -> Duration { .zero }

    /// One call after the other, for stores without pipelines (tests' fakes).
    public func gather(_ request: GatherRequest) throws(PGError) -> Gathered {
        let (verdicts, devices) = try prefetch(jobs: request.jobs, keyIds: request.keyIds)
        return Gathered(
            verdicts: verdicts, devices: devices, intelligence: try intelligence(request.intelligence),
            challenges: request.claims.isEmpty ? [:] : try consumeChallenges(request.claims))
    }
}

extension AttestStore: DecisionStore {
    public func cancelRetries() { connection.cancel() }
    public func takeDatabaseTime() -> Duration { connection.takeElapsed() }
}
