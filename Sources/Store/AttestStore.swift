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

    // MARK: Reads before deciding a batch

    /// Verdicts already stored for these jobs of their apps, and the devices with these keys: one round trip,
    /// the verdicts probed by primary key.
    public func prefetch(jobs: [ScopedJobId], keyIds: [[UInt8]]) throws(PGError) -> (verdicts: [ScopedJobId: StoredVerdict], devices: [[UInt8]: DeviceRecord]) {
        let (verdicts, devices) = try connection.run { c throws(PGError) in
            try c.pipeline(VerdictsTable.Stored(jobs: jobs), DevicesTable.ByKeys(keyIds: keyIds))
        }
        return (
            Dictionary(verdicts.map { ($0.job, $0.verdict) }, uniquingKeysWith: { _, last in last }),
            Dictionary(devices.map { ($0.keyId, $0) }, uniquingKeysWith: { _, last in last })
        )
    }

    // MARK: Writing a batch

    /// Stores a batch of decisions in one transaction and one round trip, with a handful of statements
    /// whatever the batch size (statement start-up and constraint checks, not rows, were most of
    /// PostgreSQL's time when each decision had its own): each accepted attestation on its own (device
    /// upserts do not combine), then every other decision in one set-based statement, then the risk rows
    /// that change, then the month's counts. Attestations go first so a device's assertions in the same
    /// batch find it. The outcome of each says whether it was stored, already decided, or lost a counter
    /// race; the crossings are the quota thresholds the batch's newly counted devices crossed.
    ///
    /// The batch's jobIds are locked first, in one statement (`VerdictsTable.JobLocks`: one verdict per jobId
    /// across partitions), then every statement takes its row locks in key order (attestations by key, the
    /// set-based statements sort inside, risk rows by app and identity; a row's own decisions keep their
    /// batch order), so two
    /// workers' batches wait for each other but cannot deadlock on the rows of one table. A deadlock
    /// that still happens (across tables, or against another session) is transient: the batch is
    /// retried.
    public func commit(_ decisions: [Decision]) throws(PGError) -> (outcomes: [CommitOutcome], crossings: [QuotaCrossing]) {
        guard !decisions.isEmpty else { return ([], []) }
        let attested = decisions.indices.filter { decisions[$0].attestedDevice != nil }.sorted { a, b in
            let (x, y) = (decisions[a].attestedDevice!.keyId, decisions[b].attestedDevice!.keyId)
            return x == y ? a < b : x.lexicographicallyPrecedes(y)
        }
        let others = decisions.indices.filter { decisions[$0].attestedDevice == nil }
        var pipeline = PGPipeline()
        pipeline.append(PGBegin())
        pipeline.append(VerdictsTable.JobLocks(jobs: decisions.map { ScopedJobId(app: $0.app, jobId: $0.jobId) }))
        let attestations = attested.map { (decision: $0, result: pipeline.append(VerdictsTable.Attestation(decisions[$0]))) }
        let rest = others.isEmpty ? nil : pipeline.append(VerdictsTable.Decisions(others.map { decisions[$0] }))
        let crossings = IntelligenceWrites.append(decisions, to: &pipeline)
        pipeline.append(PGCommit())
        let results = try connection.run { c throws(PGError) in try c.pipeline(pipeline) }

        // Every decision is an attestation or one of the others, so each placeholder is overwritten.
        var outcomes = [CommitOutcome](repeating: .counterConflict, count: decisions.count)
        for attestation in attestations { outcomes[attestation.decision] = results[attestation.result].outcome }
        if let rest {
            for (decision, outcome) in zip(others, results[rest]) { outcomes[decision] = outcome }
        }
        return (outcomes, crossings.map { results[$0] } ?? [])
    }
}
