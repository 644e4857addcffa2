import AttestCore
import Durations
import Lifecycle
import Observability
import PostgresClient
import Synchronization

/// Keeps `verdicts` and `device_risk_history` partitioned ahead of time and within their retention, and
/// the billing months within theirs. Every worker runs one, on its own connection; one at a time acts: each
/// change is a transaction of its own that first takes a transaction-scoped advisory lock
/// (`pg_try_advisory_xact_lock`, so a worker killed in the middle never keeps it), re-reads the catalog
/// under it and carries out the first action ``PartitionPlanner`` plans, so two workers never act on a
/// stale view. A round creates what is missing (nearest to now first), drops at most one expired partition,
/// then deletes a chunk of the rows kept outside partitions (the DEFAULT partitions' old rows, old billing
/// months), and finishes migration 0019's index by decision time where it is not finished (each partition's
/// built concurrently and attached, then the btree it replaces dropped). Every worker, lock holder or not,
/// exports the gauges from the catalog after its round.
///
/// A row never waits for maintenance: the DEFAULT partition takes a row whose partition is missing (maintenance
/// behind, a clock far off), `attest_partition_default_rows` reports it, and creating the partition later
/// moves such rows into it.
public final class PartitionMaintainer: Service {
    public struct Settings: Sendable {
        public var verdicts: PartitionPlanner.Settings
        public var riskHistory: PartitionPlanner.Settings
        /// UTC months kept before the current one in the billing tables (ATTEST_BILLING_RETENTION_MONTHS).
        public var billingMonths: Int
        public var interval: Duration
        /// Changes per round, at most (each its own short transaction).
        public var maxActions: Int = 16
        /// Rows deleted per table per round outside partitions.
        public var purgeChunk: Int64 = 10_000
        /// How long a concurrent index build (migration 0019's) waits for older transactions before it fails
        /// and leaves it to the next round.
        public var buildLockTimeout: Duration = .seconds(60)
        /// How long a round retries transient failures (an outage, a lock timeout) before it fails.
        public var retryTimeout: Duration = .seconds(30)

        public init(verdicts: PartitionPlanner.Settings, riskHistory: PartitionPlanner.Settings, billingMonths: Int, interval: Duration) {
            self.verdicts = verdicts
            self.riskHistory = riskHistory
            self.billingMonths = billingMonths
            self.interval = interval
        }

        func planner(_ table: String) -> PartitionPlanner.Settings { table == "verdicts" ? verdicts : riskHistory }
    }

    /// What one round did, for tests and the log.
    public struct Round: Sendable, Equatable {
        public var created = 0
        public var dropped = 0
        public var purged: Int64 = 0
        /// Partitions whose index by decision time this round built (migration 0019).
        public var timeIndexes = 0
        /// Whether this worker held the lock for the round's changes.
        public var locked = false
    }

    public let name = "partition maintenance"
    /// Shared by every worker: the advisory lock class of partition maintenance ("Atte"; the migrations'
    /// lock is a single 64-bit key, a space of its own).
    static let lockKey: Int32 = 0x4174_7465
    /// DEFAULT rows are counted up to this (the gauge saturates there rather than scan a large table).
    static let defaultRowsCap: Int64 = 1_000_000

    private let settings: Settings
    private let connection: PGReconnectingConnection
    private let clock: any Clock
    private let logger: Logger
    private let attached: Gauge
    private let ahead: Gauge
    private let expired: Gauge
    private let defaultRows: Gauge
    private let lastSuccess: Gauge
    private let failures: Counter
    private let task: Mutex<PeriodicTask?> = Mutex(nil)

    public init(settings: Settings, conninfo: String, clock: any Clock, registry: MetricsRegistry, logger: Logger) {
        self.settings = settings
        // Its own connection, giving up on an outage after a while (the next round tries again).
        connection = PGReconnectingConnection(conninfo: conninfo, applicationName: "attest-worker-partitions", retryTimeout: settings.retryTimeout)
        self.clock = clock
        self.logger = logger
        attached = registry.gauge(
            "attest_partitions_attached",
            help: "Partitions attached to the table, DEFAULT included (a batch looks each job up in every one of verdicts').",
            labelNames: ["table"])
        ahead = registry.gauge(
            "attest_partitions_ahead", help: "Partitions of the table that start after now (created ahead).", labelNames: ["table"])
        expired = registry.gauge(
            "attest_partitions_expired", help: "Partitions of the table wholly older than its retention, still attached.",
            labelNames: ["table"])
        defaultRows = registry.gauge(
            "attest_partition_default_rows",
            help: "Rows in the table's DEFAULT partition (no partition covered their time), counted up to 1000000.",
            labelNames: ["table"])
        lastSuccess = registry.gauge(
            "attest_partition_maintenance_last_success_timestamp_seconds",
            help: "Unix time of this worker's last partition maintenance round that completed (lock held or not).")
        failures = registry.counter(
            "attest_partition_maintenance_failures_total", help: "Partition maintenance rounds that failed.")
    }

    public func start(failed: @escaping @Sendable (any Error) -> Void) {
        let task = PeriodicTask(name: "partitions", every: settings.interval) { [self] in
            do throws(PGError) {
                let round = try runRound()
                if round.created + round.dropped + round.timeIndexes > 0 || round.purged > 0 {
                    logger.info("partition maintenance", [
                        ("created", .int(Int64(round.created))), ("dropped", .int(Int64(round.dropped))), ("purged", .int(round.purged)),
                        ("timeIndexes", .int(Int64(round.timeIndexes))),
                    ])
                }
            } catch {
                logger.warning("partition maintenance failed", [("error", .string(error.description))])
            }
        }
        self.task.withLock { $0 = task }
        task.start()
    }

    /// Cancels the connection's retries and waits for a round in progress.
    public func stop(deadline: ContinuousClock.Instant) {
        connection.cancel()
        task.withLock { $0 }?.stop()
    }

    /// One round (the periodic task's body; tests call it directly with a clock they move). A failure
    /// counts in `attest_partition_maintenance_failures_total` and is thrown.
    @discardableResult
    public func runRound() throws(PGError) -> Round {
        do {
            let round = try connection.run { c throws(PGError) in try maintain(c) }
            lastSuccess.set(Double(clock.now().microseconds) / 1e6)
            return round
        } catch {
            failures.increment()
            throw error
        }
    }

    private func maintain(_ c: PGConnection) throws(PGError) -> Round {
        var round = Round()
        actions: for _ in 0..<settings.maxActions {
            let acted = try c.transaction { c throws(PGError) -> Bool in
                try c.execute(PartitionsTable.LockTimeout())
                guard try c.execute(PartitionsTable.TryLock(key: Self.lockKey)).locked else { return false }
                round.locked = true
                let now = clock.now()
                let catalog = try c.execute(PartitionsTable.Catalog())
                for table in PartitionsTable.tables {
                    let existing = catalog.filter { $0.table == table && !$0.isDefault }.map(\.partition)
                    for action in PartitionPlanner.plan(existing, now: now, settings.planner(table)) {
                        switch action {
                        case .create(let lower, let upper):
                            _ = try c.execute(PartitionsTable.Create(table: table, lower: lower, upper: upper))
                            round.created += 1
                            return true
                        case .drop(let name) where round.dropped == 0:
                            try c.execute(PartitionsTable.Drop(table: table, partition: name))
                            round.dropped += 1
                            return true
                        case .drop:
                            continue
                        }
                    }
                }
                return false
            }
            if !acted { break actions }
        }
        if round.locked {
            round.purged = try c.transaction { c throws(PGError) -> Int64 in
                try c.execute(PartitionsTable.LockTimeout())
                guard try c.execute(PartitionsTable.TryLock(key: Self.lockKey)).locked else { return 0 }
                let now = clock.now()
                let defaults = try c.execute(
                    PartitionsTable.PurgeDefaults(
                        verdictsBefore: now.adding(seconds: -settings.verdicts.retentionSeconds),
                        riskHistoryBefore: now.adding(seconds: -settings.riskHistory.retentionSeconds), limit: settings.purgeChunk))
                let billing = try c.execute(PartitionsTable.PurgeBilling(now: now, months: settings.billingMonths, limit: settings.purgeChunk))
                return defaults.deleted + billing.deleted
            }
        }
        round.timeIndexes = try finishTimeIndex(c)
        try export(c)
        return round
    }

    /// Migration 0019's BRIN index of verdicts by decision time, finished beside the batches: each partition
    /// that lacks its index gets one built `CONCURRENTLY` (inserts go on) and attached; once every partition
    /// has one, the table's index is valid and the btree it replaces is dropped. A concurrent build cannot run
    /// in a transaction, so it runs under the session-scoped form of the maintenance lock, waiting at most
    /// `buildLockTimeout` for older transactions; one that fails or is interrupted (a worker stopped or
    /// killed) leaves an invalid index that the next round drops and builds again.
    /// Returns the partitions indexed.
    private func finishTimeIndex(_ c: PGConnection) throws(PGError) -> Int {
        var state = try c.execute(PartitionsTable.TimeIndexState())
        guard state.present, !state.valid || state.btree else { return 0 }
        var built = 0
        if !state.valid {
            guard let indexed = try buildTimeIndexes(c) else { return 0 }
            built = indexed
            state = try c.execute(PartitionsTable.TimeIndexState())
        }
        if state.valid && state.btree {
            try c.transaction { c throws(PGError) in
                try c.execute(PartitionsTable.LockTimeout())
                guard try c.execute(PartitionsTable.TryLock(key: Self.lockKey)).locked else { return }
                try c.execute(PartitionsTable.DropTimeBtree())
            }
        }
        return built
    }

    /// Builds and attaches each partition's index under the session-scoped maintenance lock, lock waits
    /// bounded by `buildLockTimeout`; both undone on the way out, failed or not (a failure to undo them
    /// means the session is gone, which undoes them too). Nil when another worker holds the lock.
    private func buildTimeIndexes(_ c: PGConnection) throws(PGError) -> Int? {
        guard try c.execute(PartitionsTable.TrySessionLock(key: Self.lockKey)).locked else { return nil }
        defer {
            try? c.execute(PartitionsTable.ResetLockTimeout())
            _ = try? c.execute(PartitionsTable.SessionUnlock(key: Self.lockKey))
        }
        try c.execute(PartitionsTable.SessionLockTimeout(milliseconds: max(1, settings.buildLockTimeout.wholeMilliseconds)))
        var built = 0
        for work in try c.execute(PartitionsTable.TimeIndexWork()) {
            try c.executeScript(work.drop)
            try c.executeScript(work.create)
            try c.transaction { c throws(PGError) in
                try c.execute(PartitionsTable.LockTimeout())
                try c.executeScript(work.attach)
            }
            built += 1
        }
        return built
    }

    /// The gauges from the catalog as it is now.
    private func export(_ c: PGConnection) throws(PGError) {
        let now = clock.now()
        let catalog = try c.execute(PartitionsTable.Catalog())
        let counts = try c.execute(PartitionsTable.DefaultRows(cap: Self.defaultRowsCap))
        for table in PartitionsTable.tables {
            let attachedToTable = catalog.filter { $0.table == table }
            let existing = attachedToTable.filter { !$0.isDefault }.map(\.partition)
            attached.labels([table]).set(Double(attachedToTable.count))
            ahead.labels([table]).set(Double(PartitionPlanner.ahead(existing, now: now)))
            expired.labels([table]).set(Double(PartitionPlanner.expired(existing, now: now, settings.planner(table)).count))
        }
        defaultRows.labels(["verdicts"]).set(Double(counts.verdicts))
        defaultRows.labels(["device_risk_history"]).set(Double(counts.riskHistory))
    }
}
