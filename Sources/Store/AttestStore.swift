import AttestCore
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import PostgresClient

/// The worker's PostgreSQL access: apps, devices and verdicts. Every method is one round trip whatever
/// the batch size (pipeline mode), and every statement binds parameters; nothing is built from input.
public final class AttestStore: @unchecked Sendable {
    /// Internal for the store's extensions in other files (challenges).
    let connection: PGReconnectingConnection
    /// Time batch bodies spent deciding inside ``batch(_:)``'s `run` (not in the database), taken out of
    /// ``takeDatabaseTime()``. Used from the one thread that runs the batches, like `connection`.
    var deciding = Duration.zero

    /// - Parameter connection: retries on a fresh connection after connection loss, with backoff.
    public init(connection: PGReconnectingConnection) {
        self.connection = connection
    }

    /// The settings of a batch lane's sessions (``PGReconnectingConnection``'s `settings`). Every statement
    /// of a batch reads by key, and the verdicts partition being filled is often one the planner believes
    /// empty (created ahead, or analyzed while it was): it would then scan it row by row, and keep doing so
    /// as it grows until autovacuum analyzes it again. Measured: 380 million rows read by sequential scans
    /// in one benchmark run, PostgreSQL's CPU per job 0.2 → 1.3 ms. Without sequential scans the planner
    /// takes the index wherever one fits, whatever the statistics say.
    public static let sessionSettings = ["enable_seqscan": "off"]

    // MARK: Apps

    public func apps() throws(PGError) -> [AppIdentity: AppPolicy] {
        let apps = try connection.run { c throws(PGError) in try c.execute(AppsTable.All()) }
        return Dictionary(apps.map { ($0.app, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Registers or replaces an app.
    public func upsert(_ app: AppPolicy) throws(PGError) {
        try connection.run { c throws(PGError) in try c.execute(AppsTable.Upsert(app)) }
    }

    // MARK: Writing decisions

    /// Stores decisions in a batch transaction of their own (tools and tests; the worker decides and settles
    /// in one, ``batch(_:)``): their jobIds locked and their stored verdicts read, then the rest written and
    /// committed, two round trips. No key is locked: a counter another session moved is a `counterConflict`.
    /// A jobId given twice is settled once, for its first decision (the write statements answer a decision
    /// by its jobId, so a second would read as stored and move its device); the later ones are
    /// `counterConflict`s, as a decision that could not be stored.
    public func commit(_ decisions: [Decision]) throws(PGError) -> (outcomes: [CommitOutcome], crossings: [QuotaCrossing]) {
        guard !decisions.isEmpty else { return ([], []) }
        return try batch { tx throws(PGError) in
            let jobs = decisions.map { ScopedJobId(app: $0.app, jobId: $0.jobId) }
            let stored = try tx.gather(GatherRequest(jobs: jobs, keyIds: [])).verdicts
            var settling = Set<ScopedJobId>()
            let fresh = decisions.indices.filter { stored[jobs[$0]] == nil && settling.insert(jobs[$0]).inserted }
            let settled = try tx.settle(fresh.map { decisions[$0] })
            var outcomes = jobs.map { job in stored[job].map(CommitOutcome.alreadyDecided) ?? .counterConflict }
            for (decision, written) in zip(fresh, settled.stored) where written { outcomes[decision] = .stored }
            return (outcomes, settled.crossings)
        }
    }
}
