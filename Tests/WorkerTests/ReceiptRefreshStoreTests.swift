import AppleReceipts
import AttestCore
import AttestVerifier
import Foundation
import Observability
import PostgresClient
import Synchronization
import Testing
@testable import DeviceIntelligence
@testable import Store
@testable import Worker

/// A clock the test moves by hand.
final class ManualClock: Clock {
    private let instant: Mutex<Timestamp>

    init(_ start: Timestamp) { instant = Mutex(start) }

    func now() -> Timestamp { instant.withLock { $0 } }

    func advance(seconds: Int64) { instant.withLock { $0 = $0.adding(seconds: seconds) } }
}

/// Receipt refresh's tables (migration 0012) against the ops/stack PostgreSQL: devices enrol on
/// attestation, claims lease disjoint devices, outcomes are applied only under the lease, a refreshed
/// metric is stored, kept and scored once, paused teams are skipped, old metrics are purged in chunks; and
/// the refresher's rounds, with a fake Apple and a manual clock.
@Suite(.serialized) struct ReceiptRefreshStoreTests {
    static let now = Timestamp(microseconds: 1_796_000_000_000_000)

    /// A migrated schema of its own, with its URL for the refresher's own connection.
    final class Database {
        let admin: PGConnection
        let schema = "receipts_\(UInt32.random(in: 0...UInt32.max))"
        let url: String
        let connection: PGConnection

        init() throws {
            let base = try #require(
                ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"], "run ops/stack up and eval \"$(ops/stack env)\"")
            admin = try PGConnection(conninfo: base)
            try admin.execute("CREATE SCHEMA \(schema)")
            url = base + (base.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(schema)"
            connection = try PGConnection(conninfo: url)
            _ = try Migrator.migrate(connection, migrations: Migrator.bundled)
        }

        deinit { _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE") }

        func store() -> AttestStore { AttestStore(connection: PGReconnectingConnection(conninfo: url)) }

        static func key(_ n: Int) -> [UInt8] { [UInt8](repeating: 0, count: 30) + [UInt8(n >> 8), UInt8(n & 0xff)] }

        /// A device attested at `attestedAt` (an enrolment), last seen then, with a risk row.
        func addDevice(_ n: Int, team: String = "TEAM", receipt: [UInt8]? = [0xaa], attestedAt: Timestamp = now, score: Int = 0) throws {
            try connection.execute(
                """
                INSERT INTO devices (key_id, team_id, bundle_id, public_key, environment, receipt, device_id, attested_at, last_seen_at)
                VALUES ($1, $2, 'app', $3, 'production', $4, $5, $6::timestamptz, $6::timestamptz)
                """,
                [.bytes(Self.key(n)), .text(team), .bytes([0x04] + [UInt8](repeating: 1, count: 64)), receipt.map(PGValue.bytes) ?? .null,
                 .text("device-\(n)"), .text(attestedAt.rfc3339)])
            try connection.execute(
                """
                INSERT INTO device_risk (team_id, bundle_id, identity, device_id, score, category, factors, updated_at)
                VALUES ($1, 'app', $2, $3, $4, $5, $6::jsonb, $7::timestamptz)
                """,
                [.text(team), .text("key:" + Hex.encode(Self.key(n))), .text("device-\(n)"), .int(Int64(score)),
                 .text(RiskCategory(score: score).rawValue),
                 .json(score == 0 ? "[]" : #"[{"name":"counter_replay","points":\#(score),"value":1}]"#),
                 .text(ReceiptRefreshStoreTests.now.rfc3339)])
        }

        func value(_ sql: String, _ params: [PGValue] = []) throws -> String? {
            try connection.execute(sql, params).string(0, 0)
        }

        func count(_ sql: String, _ params: [PGValue] = []) throws -> Int {
            Int(try connection.execute(sql, params).int(0, 0) ?? -1)
        }
    }

    static func receipt(metric: Int?, createdAt: Timestamp = now, der: [UInt8] = [0xbb]) -> RefreshedReceipt {
        RefreshedReceipt(
            der: der, riskMetric: metric, creationTime: createdAt, notBefore: createdAt.adding(seconds: 86_400),
            expirationTime: createdAt.adding(seconds: 90 * 86_400))
    }

    static func next(_ status: RefreshStatus, due: Timestamp = now.adding(seconds: 3600)) -> NextRefresh {
        .init(dueAt: due, attempts: 0, status: status)
    }

    // MARK: enrolment

    @Test func anAttestedDeviceWithAReceiptIsDueAtItsAttestationAndARefreshDoesNotReEnrolIt() throws {
        let db = try Database()
        try db.addDevice(1)
        try db.addDevice(2, receipt: nil)
        #expect(try db.count("SELECT count(*) FROM receipt_refresh") == 1)
        #expect(try db.count("SELECT count(*) FROM receipt_refresh WHERE next_due_at = $1::timestamptz", [.text(Self.now.rfc3339)]) == 1)
        let store = db.store()
        let leased = try store.claimRefreshes(owner: "a", now: Self.now, limit: 10, leaseSeconds: 60)
        #expect(leased.map(\.keyId) == [Database.key(1)])
        #expect(try store.storeRefresh(leased[0], Self.receipt(metric: nil), owner: "a", next: Self.next(.refreshed), now: Self.now) == .stored(categoryChanged: false))
        #expect(try db.count("SELECT count(*) FROM receipt_refresh WHERE next_due_at > $1::timestamptz", [.text(Self.now.rfc3339)]) == 1)
        #expect(try db.value("SELECT encode(receipt, 'hex') FROM devices WHERE key_id = $1", [.bytes(Database.key(1))]) == "bb")
        // Attested again: due at once.
        let later = Self.now.adding(seconds: 100)
        try db.connection.execute("UPDATE devices SET attested_at = $2::timestamptz WHERE key_id = $1", [.bytes(Database.key(1)), .text(later.rfc3339)])
        #expect(try db.count("SELECT count(*) FROM receipt_refresh WHERE next_due_at = $1::timestamptz AND attempts = 0", [.text(later.rfc3339)]) == 1)
    }

    /// Migration 0020 enrols a statement's inserted devices at once (a transition table), and an upsert's
    /// update branch, the same key attested again, through the row trigger: as the attestation statement writes.
    @Test func oneStatementsNewDevicesAreEnrolledTogetherAndAnUpsertedKeyIsDueAgain() throws {
        let db = try Database()
        let upsert = """
            INSERT INTO devices (key_id, team_id, bundle_id, public_key, environment, receipt, device_id, attested_at, last_seen_at)
            SELECT k, 'TEAM', 'app', $2, 'production', CASE WHEN n < 3 THEN '\\xaa'::bytea END, 'device-' || n, $3::timestamptz, $3::timestamptz
            FROM unnest($1::bytea[]) WITH ORDINALITY AS x(k, n)
            ON CONFLICT (key_id) DO UPDATE SET attested_at = EXCLUDED.attested_at
            """
        let publicKey = PGValue.bytes([0x04] + [UInt8](repeating: 1, count: 64))
        try db.connection.execute(upsert, [.array(.bytea([Database.key(1), Database.key(2), Database.key(3)])), publicKey, .text(Self.now.rfc3339)])
        #expect(try db.count("SELECT count(*) FROM receipt_refresh WHERE next_due_at = $1::timestamptz", [.text(Self.now.rfc3339)]) == 2)
        #expect(try db.count("SELECT count(*) FROM receipt_refresh WHERE key_id = $1", [.bytes(Database.key(3))]) == 0)
        try db.connection.execute("UPDATE receipt_refresh SET attempts = 3")
        let later = Self.now.adding(seconds: 100)
        try db.connection.execute(upsert, [.array(.bytea([Database.key(1), Database.key(4)])), publicKey, .text(later.rfc3339)])
        #expect(try db.count("SELECT count(*) FROM receipt_refresh WHERE next_due_at = $1::timestamptz AND attempts = 0", [.text(later.rfc3339)]) == 2)
        #expect(try db.count("SELECT count(*) FROM receipt_refresh WHERE next_due_at = $1::timestamptz AND attempts = 3", [.text(Self.now.rfc3339)]) == 1)
    }

    // MARK: leases

    @Test func twoClaimersNeverLeaseTheSameDevice() throws {
        let db = try Database()
        for n in 0..<60 { try db.addDevice(n) }
        let stores = [db.store(), db.store()]
        let taken = Mutex<[[Data]]>([[], []])
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            while let leased = try? stores[i].claimRefreshes(owner: "w\(i)", now: Self.now, limit: 3, leaseSeconds: 60), !leased.isEmpty {
                taken.withLock { $0[i] += leased.map { Data($0.keyId) } }
            }
        }
        let (a, b) = taken.withLock { ($0[0], $0[1]) }
        #expect(a.count + b.count == 60 && Set(a + b).count == 60 && Set(a).isDisjoint(with: Set(b)))
        // Leased devices are not claimed again until their lease expires; then they are.
        #expect(try stores[0].claimRefreshes(owner: "w2", now: Self.now.adding(seconds: 59), limit: 100, leaseSeconds: 60).isEmpty)
        #expect(try stores[0].claimRefreshes(owner: "w2", now: Self.now.adding(seconds: 60), limit: 100, leaseSeconds: 60).count == 60)
        // The shell's lease of one device respects a worker's.
        #expect(try stores[1].leaseRefresh(keyId: Database.key(0), teamId: nil, bundleId: nil, owner: "cli", now: Self.now.adding(seconds: 61), leaseSeconds: 60) == nil)
        #expect(try stores[1].leaseRefresh(keyId: Database.key(0), teamId: "OTHER", bundleId: nil, owner: "cli", now: Self.now.adding(seconds: 200), leaseSeconds: 60) == nil)
        #expect(try stores[1].leaseRefresh(keyId: Database.key(0), teamId: "TEAM", bundleId: "app", owner: "cli", now: Self.now.adding(seconds: 200), leaseSeconds: 60)?.keyId == Database.key(0))
    }

    @Test func anOutcomeIsAppliedOnlyUnderItsLease() throws {
        let db = try Database()
        try db.addDevice(1)
        let store = db.store()
        let a = try #require(try store.claimRefreshes(owner: "a", now: Self.now, limit: 1, leaseSeconds: 10).first)
        let b = try #require(try store.claimRefreshes(owner: "b", now: Self.now.adding(seconds: 11), limit: 1, leaseSeconds: 10).first)
        #expect(try store.storeRefresh(a, Self.receipt(metric: 9), owner: "a", next: Self.next(.refreshed), now: Self.now) == .leaseLost)
        #expect(try store.settleRefresh(a, owner: "a", next: Self.next(.notModified), now: Self.now, called: true) == false)
        #expect(try db.value("SELECT encode(receipt, 'hex') FROM devices") == "aa")
        #expect(try db.count("SELECT count(*) FROM receipt_metrics") == 0)
        #expect(try store.settleRefresh(b, owner: "b", next: Self.next(.notModified), now: Self.now, called: true))
        #expect(try db.value("SELECT last_status FROM receipt_refresh") == "not_modified")
        #expect(try db.value("SELECT lease_owner FROM receipt_refresh") == nil)
    }

    // MARK: a refreshed metric

    @Test func aRefreshedMetricIsStoredKeptAndScoredAndItsCategoryChangeIsOneEvent() throws {
        let db = try Database()
        try db.addDevice(1, score: 15)
        let store = db.store()
        let identity = "key:" + Hex.encode(Database.key(1))
        let first = try #require(try store.claimRefreshes(owner: "a", now: Self.now, limit: 1, leaseSeconds: 60).first)
        // 3 is within the allowance: stored, not scored, the category unchanged.
        #expect(try store.storeRefresh(first, Self.receipt(metric: 3), owner: "a", next: Self.next(.refreshed, due: Self.now), now: Self.now)
            == .stored(categoryChanged: false))
        #expect(try db.value("SELECT score::text || ' ' || receipt_risk_metric || ' ' || coalesce(receipt_metric_growth::text, '-') FROM device_risk") == "15 3 -")
        // A day later 9 (16 points), grown by 6 (20 points): suspicious, one event, one history row.
        let day = Self.now.adding(seconds: 86_400)
        let second = try #require(try store.claimRefreshes(owner: "a", now: day, limit: 1, leaseSeconds: 60).first)
        #expect(try store.storeRefresh(second, Self.receipt(metric: 9, createdAt: day), owner: "a", next: Self.next(.refreshed, due: day), now: day)
            == .stored(categoryChanged: true))
        #expect(try db.value("SELECT score::text || ' ' || category || ' ' || receipt_metric_growth FROM device_risk") == "51 suspicious 6")
        #expect(
            try db.value("SELECT string_agg(f->>'name', ',' ORDER BY o) FROM device_risk, jsonb_array_elements(factors) WITH ORDINALITY AS x(f, o)")
                == "counter_replay,receipt_risk_metric,receipt_risk_metric_growth")
        #expect(try db.count("SELECT count(*) FROM receipt_metrics WHERE key_id = $1", [.bytes(Database.key(1))]) == 2)
        let cause = AttestStore.refreshCause(Database.key(1), day)
        #expect(try db.count("SELECT count(*) FROM device_risk_history WHERE job_id = $1 AND score = 51", [.text(cause)]) == 1)
        let event = try #require(try db.value("SELECT detail::text FROM events WHERE kind = 'device.risk_category_changed'"))
        let detail = try #require(JSONValue.parse(Array(event.utf8)))
        #expect(detail == .object([
            ("to", .string("suspicious")), ("from", .string("trusted")), ("jobId", .string(cause)), ("score", .int(51)),
            ("deviceId", .string("device-1")), ("identity", .string(identity)),
        ]))
        // The same receipt applied again (another lease): no second metric, event or history row.
        let again = try #require(try store.leaseRefresh(keyId: Database.key(1), teamId: nil, bundleId: nil, owner: "b", now: day, leaseSeconds: 60))
        #expect(try store.storeRefresh(again, Self.receipt(metric: 9, createdAt: day), owner: "b", next: Self.next(.refreshed), now: day)
            == .stored(categoryChanged: false))
        #expect(try db.count("SELECT count(*) FROM receipt_metrics") == 2)
        #expect(try db.count("SELECT count(*) FROM events") == 1)
        #expect(try db.count("SELECT count(*) FROM device_risk_history") == 1)
        // The batch's read of the device sees the metric, its date and its growth.
        let shown = try #require(try store.storedReceipt(keyId: Database.key(1)))
        #expect(shown.lastStatus == "refreshed" && shown.refreshedAt != nil)
        guard case .array(let metrics) = shown.metrics else { Issue.record("metrics not an array"); return }
        #expect(metrics.count == 2)
    }

    @Test func aPausedTeamIsSkippedUntilItsPauseEnds() throws {
        let db = try Database()
        try db.addDevice(1, team: "BAD")
        try db.addDevice(2, team: "BAD")
        try db.addDevice(3, team: "GOOD")
        let store = db.store()
        let first = try #require(try store.leaseRefresh(keyId: Database.key(1), teamId: nil, bundleId: nil, owner: "a", now: Self.now, leaseSeconds: 60))
        let next = RefreshPlanner.after(.misconfigured(status: 403, reason: "refused"), attempts: 0, now: Self.now, schedule: RefreshSchedule())
        #expect(try store.settleRefresh(first, owner: "a", next: next, now: Self.now, called: true))
        #expect(try store.pausedRefreshTeams(now: Self.now).map(\.teamId) == ["BAD"])
        #expect(try store.pausedRefreshTeams(now: Self.now).first?.status == 403)
        // The team's other device waits for the pause's end too; the other team's does not.
        #expect(try db.count("SELECT count(*) FROM receipt_refresh WHERE next_due_at = $1::timestamptz", [.text(next.dueAt.rfc3339)]) == 2)
        let during = try store.claimRefreshes(owner: "a", now: Self.now.adding(seconds: 120), limit: 10, leaseSeconds: 60)
        #expect(during.map(\.teamId) == ["GOOD"])
        let after = try store.claimRefreshes(owner: "a", now: Self.now.adding(seconds: 3601), limit: 10, leaseSeconds: 60)
        #expect(Set(after.filter { $0.teamId == "BAD" }.map(\.keyId)) == [Database.key(1), Database.key(2)])
    }

    @Test func metricsOlderThanTheRetentionArePurgedInChunks() throws {
        let db = try Database()
        for i in 0..<30 {
            try db.connection.execute(
                "INSERT INTO receipt_metrics (key_id, receipt_created_at, metric, stored_at) VALUES ($1, $2::timestamptz, 1, $2::timestamptz)",
                [.bytes(Database.key(1)), .text(Self.now.adding(seconds: Int64(i < 25 ? -1000 - i : i)).rfc3339)])
        }
        #expect(try db.store().purgeReceiptMetrics(before: Self.now, chunk: 10) == 25)
        #expect(try db.count("SELECT count(*) FROM receipt_metrics") == 5)
    }

    // MARK: the refresher's rounds

    /// Apple, as the test scripts it: answers in turn, and the requests it got.
    final class FakeApple: ReceiptRefreshing {
        let answers: Mutex<[ReceiptRefreshOutcome]>
        let requests = Mutex<[ReceiptRefreshRequest]>([])
        let configuredTeams: Set<String>

        init(_ answers: [ReceiptRefreshOutcome], teams: Set<String> = ["TEAM"]) {
            self.answers = Mutex(answers)
            configuredTeams = teams
        }

        func isConfigured(teamId: String) -> Bool { configuredTeams.contains(teamId) }

        func refresh(_ request: ReceiptRefreshRequest, now: Timestamp) -> ReceiptRefreshOutcome {
            requests.withLock { $0.append(request) }
            return answers.withLock { $0.isEmpty ? .notModified : $0.removeFirst() }
        }

        var calls: Int { requests.withLock { $0.count } }
    }

    static func refresher(
        _ db: Database, _ apple: FakeApple, clock: ManualClock, perTeam: RateLimitStore.Limit = .init(perMinute: 6000, burst: 100),
        readiness: Readiness.Conditions = Readiness.Conditions(), registry: MetricsRegistry = MetricsRegistry()
    )
        -> ReceiptRefresher
    {
        ReceiptRefresher(
            settings: .init(perTeam: perTeam), conninfo: db.url, refresher: apple, clock: clock, registry: registry,
            readiness: readiness, logger: Logger(level: .error, sink: { _ in }))
    }

    @Test func retryAfterIsHonouredAndTheNextAnswerIsStored() throws {
        let db = try Database()
        try db.addDevice(1)
        let clock = ManualClock(Self.now)
        let apple = FakeApple([.retryLater(retryAfter: .seconds(300), reason: "429"), .refreshed(Self.receipt(metric: 4, createdAt: Self.now))])
        let refresher = Self.refresher(db, apple, clock: clock)
        refresher.round()
        #expect(apple.calls == 1)
        #expect(apple.requests.withLock { $0[0] } == ReceiptRefreshRequest(
            teamId: "TEAM", bundleId: "app", environment: .production, receipt: [0xaa], attestedKey: [0x04] + [UInt8](repeating: 1, count: 64)))
        #expect(try db.value("SELECT last_status || ' ' || attempts FROM receipt_refresh") == "retry_later 1")
        clock.advance(seconds: 299)
        refresher.round()
        #expect(apple.calls == 1)
        clock.advance(seconds: 1)
        refresher.round()
        #expect(apple.calls == 2)
        #expect(try db.value("SELECT last_status || ' ' || attempts FROM receipt_refresh") == "refreshed 0")
        #expect(try db.value("SELECT encode(receipt, 'hex') FROM devices") == "bb")
        #expect(try db.count("SELECT receipt_risk_metric FROM device_risk") == 4)
    }

    @Test func unconfiguredTeamsAndStaleDevicesAreNotSentAndTheTeamBudgetIsShared() throws {
        let db = try Database()
        try db.addDevice(1, team: "NOKEY")
        try db.addDevice(2, attestedAt: Self.now.adding(seconds: -40 * 86_400))
        for n in 3..<6 { try db.addDevice(n) }
        let clock = ManualClock(Self.now)
        let apple = FakeApple([])
        // A burst of 2 for the team: three due devices, two requests; the third is due when a token is.
        let limit = RateLimitStore.Limit(perMinute: 1, burst: 2)
        let (a, b) = (Self.refresher(db, apple, clock: clock, perTeam: limit), Self.refresher(db, apple, clock: clock, perTeam: limit))
        a.round()
        #expect(apple.calls == 2)
        // The bucket refills on the database's clock, which runs on while the round does: a token is a
        // minute away, less what the takes themselves took.
        #expect(try db.count("SELECT count(*) FROM receipt_refresh WHERE last_status = 'rate_limited' AND next_due_at BETWEEN $1::timestamptz AND $2::timestamptz", [.text(Self.now.adding(seconds: 50).rfc3339), .text(Self.now.adding(seconds: 60).rfc3339)]) == 1)
        // The budget is the team's across workers: another refresher, which took none, finds it spent.
        clock.advance(seconds: 61)
        b.round()
        #expect(apple.calls == 2)
        let statuses = try db.connection.execute("SELECT last_status, count(*) FROM receipt_refresh GROUP BY 1 ORDER BY 1")
        let counts = Dictionary(uniqueKeysWithValues: (0..<statuses.count).map { (statuses.string($0, 0) ?? "-", statuses.int($0, 1) ?? 0) })
        #expect(counts == ["idle": 1, "not_modified": 2, "rate_limited": 1, "unconfigured": 1])
    }
}
