import AttestCore
import AttestCrypto
import AttestVerifier
import Foundation
import HTTPClient
import Lifecycle
import Observability
import PostgresClient
import Store

/// Keeps Google's Android certificate status list fresh for every worker, off the job path (CONTRACT 9).
///
/// Each round, on a thread of its own, reads the stored list's digest (migration 0015) and loads the body
/// only when it changed; when a fetch is due (``Settings/refreshSeconds`` after the last, sooner after a
/// failure) the worker whose round moves `next_fetch_at` ahead first fetches it over HTTPS with libcurl,
/// checks that it parses, and stores it, so one worker fetches for all of them. A failed fetch keeps the
/// stored list and is retried after ``Settings/retrySeconds``. A list from ``Settings/file`` is stored at
/// start unless a newer one is stored already. The list's age is exported each round
/// (`attest_android_status_list_age_seconds`, +Inf until one is held) beside its bound, for the alert.
public final class AndroidStatusListRefresher: Service {
    public let name = "android status list"

    public struct Settings: Sendable {
        /// Where to fetch it (ATTEST_ANDROID_STATUS_LIST_URL); nil: never fetched, only read.
        public var url: String?
        /// A list to store at start (ATTEST_ANDROID_STATUS_LIST_FILE): its bytes as read, parsed, and the
        /// file's modification time.
        public var file: (path: String, body: [UInt8], list: AndroidStatusList, modifiedAt: Timestamp)?
        public var refreshSeconds: Int64 = 3600
        /// The age past which the list counts as stale (ATTEST_ANDROID_STATUS_LIST_MAX_AGE), exported for the alert.
        public var maxAgeSeconds: Int64 = 172_800
        /// What Android attestations get past ``maxAgeSeconds`` (``AndroidStatusGate``).
        public var whenStale: AndroidStatusGate.WhenStale = .refuse
        public var retrySeconds: Int64 = 300
        public var interval: Duration = .seconds(60)
        public var http = HTTPClient.Configuration(
            requestTimeout: .seconds(30), maxResponseBodyBytes: AndroidStatusList.maxBytes, idleHandles: 1)

        public init() {}
    }

    /// The list this worker holds, for the Android checks.
    public var lists: AndroidStatusLists { rounds.lists }

    /// What the pipeline checks Android attestations against: this refresher's list, under its settings.
    public let gate: AndroidStatusGate
    private let rounds: Rounds
    private let task: PeriodicTask

    public init(conninfo: String, settings: Settings, clock: any Clock, metrics: MetricsRegistry, logger: Logger) {
        let rounds = Rounds(conninfo: conninfo, settings: settings, clock: clock, metrics: metrics, logger: logger)
        gate = AndroidStatusGate(lists: rounds.lists, maxAgeSeconds: settings.maxAgeSeconds, whenStale: settings.whenStale)
        self.rounds = rounds
        task = PeriodicTask(name: "status-list", every: settings.interval) { rounds.round() }
    }

    public func start(failed: @escaping @Sendable (any Error) -> Void) { task.start() }

    /// Cancels the connection's retries and waits for a round in progress.
    public func stop(deadline: ContinuousClock.Instant) {
        rounds.connection.cancel()
        task.stop()
    }

    /// One round now, on the caller's thread (tests).
    func round() { rounds.round() }
}

/// What a round reads, fetches, stores and exports; one per refresher, run by its task alone.
private final class Rounds: Sendable {
    let lists = AndroidStatusLists()
    let connection: PGReconnectingConnection
    private let settings: AndroidStatusListRefresher.Settings
    private let clock: any Clock
    private let logger: Logger
    private let client: HTTPClient
    private let age: Gauge
    private let entries: Gauge
    private let fetches: Counter

    init(conninfo: String, settings: AndroidStatusListRefresher.Settings, clock: any Clock, metrics: MetricsRegistry, logger: Logger) {
        self.settings = settings
        self.clock = clock
        self.logger = logger
        connection = PGReconnectingConnection(conninfo: conninfo, applicationName: "attest-worker-status-list", retryTimeout: .seconds(30))
        client = HTTPClient(configuration: settings.http)
        age = metrics.gauge(
            "attest_android_status_list_age_seconds",
            help: "Seconds since the Android certificate status list this worker holds was fetched (+Inf: none held yet).")
        entries = metrics.gauge("attest_android_status_list_entries", help: "Serial numbers on the status list this worker holds.")
        metrics.gauge(
            "attest_android_status_list_max_age_seconds", help: "ATTEST_ANDROID_STATUS_LIST_MAX_AGE: the age past which the list is stale."
        ).set(Double(settings.maxAgeSeconds))
        fetches = metrics.counter(
            "attest_android_status_list_fetches_total", help: "Status list fetches by this worker, by outcome (stored, failed).",
            labelNames: ["outcome"])
        age.set(.infinity)
    }

    /// One round; failures are logged and the next round tries again.
    func round() {
        let now = clock.now()
        do throws(PGError) {
            if let file = settings.file, lists.current == nil {
                try store(file.body, file.list, source: "file:\(file.path)", fetchedAt: file.modifiedAt, nextFetchAt: now)
            }
            let current = try connection.run { c throws(PGError) in try c.execute(AndroidStatusListTable.Current()) }
            if let current, current.sha256 != lists.current?.sha256 { try load() }
            if let url = settings.url, current.map({ $0.nextFetchAt <= now }) ?? true {
                var taken = true
                if current != nil {
                    let lease = AndroidStatusListTable.TakeFetch(now: now, leaseUntil: now.adding(seconds: settings.retrySeconds))
                    taken = try connection.run { c throws(PGError) in try c.execute(lease) } == 1
                }
                if taken { try fetch(url, at: now) }
            }
        } catch {
            logger.warning("android status list round failed", [("error", .string("\(error)"))])
        }
        if let held = lists.current {
            age.set(Double(max(0, clock.now().microseconds - held.fetchedAt.microseconds)) / 1e6)
            entries.set(Double(held.list.entries.count))
        }
    }

    private func fetch(_ url: String, at now: Timestamp) throws(PGError) {
        let problem: String
        switch client.get(HTTPClientRequest(url: url, headers: [("Accept", "application/json")])) {
        case .success(let response) where response.status == 200:
            let list: AndroidStatusList
            do throws(AndroidStatusList.ParseError) {
                list = try AndroidStatusList(json: response.body)
            } catch {
                problem = error.description
                break
            }
            try store(response.body, list, source: url, fetchedAt: now, nextFetchAt: now.adding(seconds: settings.refreshSeconds))
            fetches.labels(["stored"]).increment()
            return
        case .success(let response): problem = "the server answered \(response.status)"
        case .failure(let error): problem = error.description
        }
        fetches.labels(["failed"]).increment()
        logger.warning("android status list fetch failed", [("url", .string(url)), ("error", .string(problem))])
        _ = try connection.run { c throws(PGError) in
            try c.execute(AndroidStatusListTable.Failure(reason: problem, at: now, retryAt: now.adding(seconds: settings.retrySeconds)))
        }
    }

    /// Stores a parsed list and holds it, unless a newer one is stored: then that one is loaded.
    private func store(_ body: [UInt8], _ list: AndroidStatusList, source: String, fetchedAt: Timestamp, nextFetchAt: Timestamp)
        throws(PGError)
    {
        let sha256 = Digest.sha256.hash(body)
        let statement = AndroidStatusListTable.Store(
            body: body, sha256: sha256, entries: list.entries.count, source: source, fetchedAt: fetchedAt, nextFetchAt: nextFetchAt)
        if try connection.run({ c throws(PGError) in try c.execute(statement) }) == 1 {
            hold(AndroidStatusLists.Held(list: list, sha256: sha256, fetchedAt: fetchedAt, source: source))
        } else {
            try load()
        }
    }

    /// Reads the stored list and holds it when it parses (a stored list that does not is logged and skipped:
    /// the one held stays).
    private func load() throws(PGError) {
        guard let stored = try connection.run({ c throws(PGError) in try c.execute(AndroidStatusListTable.Body()) }),
            stored.sha256 != lists.current?.sha256
        else { return }
        do {
            let list = try AndroidStatusList(json: stored.body)
            hold(AndroidStatusLists.Held(list: list, sha256: stored.sha256, fetchedAt: stored.fetchedAt, source: stored.source))
        } catch {
            logger.warning("stored android status list unreadable", [("error", .string("\(error)"))])
        }
    }

    private func hold(_ held: AndroidStatusLists.Held) {
        lists.hold(held)
        logger.info(
            "android status list loaded",
            [("entries", .int(Int64(held.list.entries.count))), ("source", .string(held.source)), ("fetchedAt", .string(held.fetchedAt.rfc3339))])
    }
}
