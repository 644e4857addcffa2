import AppleReceipts
import AttestCore
import AttestCrypto
import AttestVerifier
import Lifecycle
import Observability
import PostgresClient
import Store
import Synchronization

/// Refreshes Apple's fraud-risk receipts in the background (docs/device-intelligence.md, "Receipt
/// refresh"). Each round leases a few due devices (``AttestStore/claimRefreshes(owner:now:limit:leaseSeconds:)``:
/// rows claimed `FOR UPDATE SKIP LOCKED` and marked leased, so two workers never refresh one device at
/// once), then for each: the ``RefreshPlanner`` decides whether to ask Apple, the team's request budget (a
/// token bucket in PostgreSQL, shared by every worker) is taken, the refresher is called on this thread, and
/// its outcome is applied in one transaction while the lease is still this worker's. Nothing here is on a
/// job's path: batches never read what this writes until it is committed, and never wait for Apple. Every
/// worker runs one, on a database connection and a thread of its own.
///
/// A team Apple refused (``Readiness/Advisory/receiptRefreshRefused(team:status:pausedUntil:)``) is shown
/// on `/readyz` as an advisory, not a condition: verdicts never wait for a refresh, so the worker stays
/// ready. The notes follow the paused teams in PostgreSQL each round, so every worker shows them.
public final class ReceiptRefresher: Service {
    public let name = "receipt refresher"

    public struct Settings: Sendable {
        public var schedule: RefreshSchedule
        /// Devices leased per round.
        public var batchSize: Int
        public var interval: Duration
        /// How long a lease lasts; a device is only sent while at least `requestSeconds` of it remain, so
        /// a lease never runs out during a request.
        public var leaseSeconds: Int64
        /// The longest one request may take (the client's timeouts).
        public var requestSeconds: Int64
        /// Requests to Apple per team, shared by every worker.
        public var perTeam: RateLimitStore.Limit
        /// How long refreshed metrics are kept.
        public var metricRetentionSeconds: Int64

        public init(
            schedule: RefreshSchedule = RefreshSchedule(), batchSize: Int = 8, interval: Duration = .seconds(5), leaseSeconds: Int64 = 300,
            requestSeconds: Int64 = 30, perTeam: RateLimitStore.Limit = .init(perMinute: 60, burst: 10),
            metricRetentionSeconds: Int64 = 180 * 86_400
        ) {
            self.schedule = schedule
            self.batchSize = batchSize
            self.interval = interval
            self.leaseSeconds = max(leaseSeconds, requestSeconds + 1)
            self.requestSeconds = requestSeconds
            self.perTeam = perTeam
            self.metricRetentionSeconds = metricRetentionSeconds
        }
    }

    /// What one device's try came to, for the log, the metrics and `attest-worker receipt refresh`.
    public struct Report: Sendable, Equatable {
        public var next: NextRefresh
        /// Apple's answer; nil when Apple was not asked.
        public var outcome: ReceiptRefreshOutcome?
        /// False when the lease was lost before the result could be written.
        public var settled: Bool
        public var categoryChanged: Bool
    }

    private let settings: Settings
    private let connection: PGReconnectingConnection
    private let store: AttestStore
    private let refresher: any ReceiptRefreshing
    private let clock: any Clock
    private let logger: Logger
    /// This process's name on the leases it holds.
    public let owner: String
    private let refreshes: Counter
    private let pausedTeams: Gauge
    private let readiness: Readiness.Conditions
    private let stopping = Atomic<Bool>(false)
    private let task: Mutex<PeriodicTask?> = Mutex(nil)

    public init(
        settings: Settings, conninfo: String, refresher: any ReceiptRefreshing, clock: any Clock, registry: MetricsRegistry,
        readiness: Readiness.Conditions, logger: Logger
    ) {
        self.settings = settings
        self.readiness = readiness
        connection = PGReconnectingConnection(conninfo: conninfo, applicationName: "attest-worker-receipts", retryTimeout: .seconds(10))
        store = AttestStore(connection: connection)
        self.refresher = refresher
        self.clock = clock
        self.logger = logger
        owner = "worker-" + Hex.encode((try? SecureRandom.bytes(8)) ?? [])
        refreshes = registry.counter(
            "attest_receipt_refreshes_total", help: "Receipt refresh tries, by how they ended (receipt_refresh.last_status).",
            labelNames: ["outcome"])
        pausedTeams = registry.gauge(
            "attest_receipt_refresh_teams_paused", help: "Teams whose refreshes are paused because Apple refused their key (400/401/403).")
    }

    public func start(failed: @escaping @Sendable (any Error) -> Void) {
        let task = PeriodicTask(name: "receipts", every: settings.interval) { [self] in round() }
        self.task.withLock { $0 = task }
        task.start()
    }

    /// Ends the round after the request in progress (bounded by the client's timeouts); the devices it
    /// leased but did not send are freed for the next worker.
    public func stop(deadline: ContinuousClock.Instant) {
        stopping.store(true, ordering: .relaxed)
        connection.cancel()
        task.withLock { $0 }?.stop()
    }

    /// One round: purge old metrics, lease due devices, try each. Failures are logged; the leases they
    /// leave expire and the devices are tried again.
    func round() {
        do throws(PGError) {
            let now = clock.now()
            let purged = try store.purgeReceiptMetrics(before: now.adding(seconds: -settings.metricRetentionSeconds))
            if purged > 0 { logger.info("old receipt metrics deleted", [("rows", .int(Int64(purged)))]) }
            showPaused(try store.pausedRefreshTeams(now: now))
            let leased = try store.claimRefreshes(owner: owner, now: now, limit: settings.batchSize, leaseSeconds: settings.leaseSeconds)
            let leaseEnd = now.adding(seconds: settings.leaseSeconds)
            for device in leased {
                let now = clock.now()
                guard !stopping.load(ordering: .relaxed), now.adding(seconds: settings.requestSeconds) < leaseEnd else {
                    // Freed as due now, for whichever worker claims next.
                    try store.settleRefresh(
                        device, owner: owner, next: .init(dueAt: now, attempts: device.attempts, status: .waiting), now: now, called: false)
                    continue
                }
                record(try refresh(device))
            }
        } catch {
            logger.warning("receipt refresh round failed", [("error", .string(error.description))])
        }
    }

    /// How long this refresher's leases last.
    public var leaseSeconds: Int64 { settings.leaseSeconds }

    /// Tries one leased device: plan, take the team's budget, ask, apply. `forced`: see
    /// ``RefreshPlanner/before(_:storedNotBefore:configured:now:schedule:forced:)``.
    public func refresh(_ device: ClaimedRefresh, forced: Bool = false) throws(PGError) -> Report {
        let now = clock.now()
        let configured = device.teamId.map(refresher.isConfigured(teamId:)) ?? false
        let step = RefreshPlanner.before(
            device, storedNotBefore: device.storedNotBefore, configured: configured, now: now, schedule: settings.schedule, forced: forced)
        // `.call` implies the device's columns are there (the planner checked them).
        guard case .call = step, let teamId = device.teamId, let bundleId = device.bundleId, let receipt = device.receipt,
            let key = device.publicKey
        else {
            let next: NextRefresh
            if case .settle(let planned) = step {
                next = planned
            } else {
                next = .init(dueAt: now.adding(seconds: settings.schedule.idleSeconds), attempts: device.attempts, status: .idle)
            }
            let settled = try store.settleRefresh(device, owner: owner, next: next, now: now, called: false)
            return Report(next: next, outcome: nil, settled: settled, categoryChanged: false)
        }
        if let wait = try connection.run({ c throws(PGError) in
            try RateLimitStore.take(Self.bucket(teamId), settings.perTeam, on: c)
        }) {
            let next = RefreshPlanner.rateLimited(retryAfterSeconds: wait, attempts: device.attempts, now: now, schedule: settings.schedule)
            let settled = try store.settleRefresh(device, owner: owner, next: next, now: now, called: false)
            return Report(next: next, outcome: nil, settled: settled, categoryChanged: false)
        }
        let environment: AppAttestEnvironment = device.environment == AppAttestEnvironment.development.rawValue ? .development : .production
        let request = ReceiptRefreshRequest(teamId: teamId, bundleId: bundleId, environment: environment, receipt: receipt, attestedKey: key)
        let outcome = refresher.refresh(request, now: now)
        let after = clock.now()
        let next = RefreshPlanner.after(outcome, attempts: device.attempts, now: after, schedule: settings.schedule)
        if case .refreshed(let refreshed) = outcome {
            let applied = try store.storeRefresh(device, refreshed, owner: owner, next: next, now: after)
            if applied != .leaseLost { showPaused(try store.pausedRefreshTeams(now: after)) }
            return Report(next: next, outcome: outcome, settled: applied != .leaseLost, categoryChanged: applied == .stored(categoryChanged: true))
        }
        let settled = try store.settleRefresh(device, owner: owner, next: next, now: after, called: true)
        if case .rejected(let reason) = outcome {
            // Apple's 200 (or whoever answered) was not a receipt to store: named by device and team, never
            // with the receipt or a key.
            logger.warning("refreshed receipt rejected; nothing stored", [
                ("keyId", .string(Base64.encode(device.keyId))), ("deviceId", device.deviceId.map(JSONValue.string) ?? .null),
                ("teamId", .string(teamId)), ("bundleId", .string(bundleId)), ("reason", .string(reason)),
                ("nextDueAt", .string(next.dueAt.rfc3339)),
            ])
        }
        if case .misconfigured(let status, let reason) = outcome {
            // The reason is the client's classification, which never carries the key or the request.
            logger.error("Apple refused the team's DeviceCheck key; its refreshes are paused", [
                ("teamId", .string(teamId)), ("status", .int(Int64(status))), ("reason", .string(reason)),
                ("pausedUntil", .string(next.dueAt.rfc3339)),
            ])
            if settled { showPaused(try store.pausedRefreshTeams(now: after)) }
        }
        return Report(next: next, outcome: outcome, settled: settled, categoryChanged: false)
    }

    private func record(_ report: Report) {
        refreshes.labels([report.next.status.rawValue]).increment()
        if !report.settled { logger.warning("receipt refresh lease lost; another worker's result stands") }
    }

    /// Sets the gauge and the `/readyz` notes to the teams paused now: a note goes when its team's pause
    /// ended (or another worker's refresh of the team succeeded). The gauge is set first, so whoever sees a
    /// note sees the gauge that counts it; a refresh that pauses or unpauses a team shows it at once.
    private func showPaused(_ paused: [(teamId: String, status: Int, reason: String?, pausedUntil: Timestamp)]) {
        pausedTeams.set(Double(paused.count))
        let teams = Set(paused.map(\.teamId))
        readiness.withdraw { if case .receiptRefreshRefused(let team, _, _) = $0 { !teams.contains(team) } else { false } }
        for team in paused {
            readiness.advise(.receiptRefreshRefused(team: team.teamId, status: team.status, pausedUntil: team.pausedUntil))
        }
    }

    /// The team's request bucket among the rate buckets (``RateLimitStore``).
    static func bucket(_ teamId: String) -> String { "receipt-refresh:" + teamId }
}
