import AttestJobs
import DeviceIntelligence
import PostgresClient

/// What the batch processor needs from storage; `AttestStore` is the PostgreSQL one, tests use fakes.
public protocol DecisionStore: Sendable {
    func apps() throws(PGError) -> [AppIdentity: AppPolicy]
    /// Runs a batch's gather, decide and settle as one transaction: `body` gathers first (which locks the
    /// batch's jobIds and device rows), decides from what it read, and settles. After a transient failure
    /// the store may run `body` again whole, on a fresh connection: it must have no effect outside its
    /// return value.
    func batch<T>(_ body: (any BatchTransaction) throws(PGError) -> T) throws(PGError) -> T
    /// Stops retrying transient failures for good (shutdown): later calls throw `.cancelled` unless the
    /// database serves them at once.
    func cancelRetries()
    /// The time spent in the database since the last call (the batch loop's, after each batch), for
    /// `attest_batch_database_seconds`.
    func takeDatabaseTime() -> Duration
}

/// One batch's transaction (``DecisionStore/batch(_:)``): gather, then any further reads, then settle,
/// which commits.
public protocol BatchTransaction {
    /// Locks the batch's jobIds and its keys' device rows, then reads everything the batch needs in one
    /// round trip (``GatherRequest``). What it reads cannot change before ``settle(_:)``: another batch
    /// with the same jobIds or keys waits for this one to commit.
    func gather(_ request: GatherRequest) throws(PGError) -> Gathered
    /// Risk histories, counts and quotas the gather did not ask for (identities its device rows changed).
    func intelligence(_ query: IntelligenceQuery) throws(PGError) -> IntelligenceSnapshot
    /// Settles worker-issued challenges by jobId (claims beyond the gather's one per jobId).
    func consumeChallenges(_ claims: [ChallengeClaim]) throws(PGError) -> [String: ChallengeOutcome]
    /// Writes every decision and commits, one round trip; says whether each was stored (under the gather's
    /// locks every one is: not stored means a writer that takes no lock got there first) and the quota
    /// thresholds crossed.
    func settle(_ decisions: [Decision]) throws(PGError) -> (stored: [Bool], crossings: [QuotaCrossing])
}

extension DecisionStore {
    /// Stores that do not retry have nothing to cancel.
    public func cancelRetries() {}
    /// Stores without a database take no time in one.
    public func takeDatabaseTime() -> Duration { .zero }
}

extension AttestStore: DecisionStore {
    public func cancelRetries() { connection.cancel() }

    public func takeDatabaseTime() -> Duration {
        defer { deciding = .zero }
        return connection.takeElapsed() - deciding
    }
}
