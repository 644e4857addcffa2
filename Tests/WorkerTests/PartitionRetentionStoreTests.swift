import AttestCore
import AttestJobs
import Foundation
import Observability
import PostgresClient
import Synchronization
import Testing
@testable import Store
@testable import Worker

/// A clock the test moves.
final class PartitionTestClock: Clock {
    private let instant: Mutex<Timestamp>

    init(_ instant: Timestamp) { self.instant = Mutex(instant) }

    func now() -> Timestamp { instant.withLock { $0 } }
    func advance(seconds: Int64) { instant.withLock { $0 = $0.adding(seconds: seconds) } }
}

/// Partitioned verdicts and risk history against the ops/stack PostgreSQL, each test in a schema of its
/// own: migration 0011 keeps every row, maintenance driven by a clock the test moves creates ahead, drops
/// what is past the retention and nothing else, and jobs are effectively once across partitions.
@Suite struct PartitionRetentionStoreTests {
    typealias S = AttestStoreTests
    static let app = AppIdentity(teamId: "TEAM123456", bundleId: "com.example.a")

    /// A schema of its own, migrated up to `version` (all by default).
    final class Schema {
        let admin: PGConnection
        let name = "retention_\(UInt32.random(in: 0...UInt32.max))"
        let url: String
        let connection: PGConnection

        init(upTo version: Int = .max) throws {
            let base = try #require(
                ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"], "run ops/stack up and eval \"$(ops/stack env)\"")
            admin = try PGConnection(conninfo: base)
            try admin.execute("CREATE SCHEMA \(name)")
            url = base + (base.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(name)"
            connection = try PGConnection(conninfo: url)
            _ = try Migrator.migrate(connection, migrations: Migrator.bundled.filter { $0.version <= version })
        }

        deinit { _ = try? admin.execute("DROP SCHEMA \(name) CASCADE") }

        func count(_ sql: String) throws -> Int64 { try #require(try connection.execute(sql).int(0, 0)) }

        func partitions(_ table: String) throws -> [String] {
            let rows = try connection.execute(
                "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1) ORDER BY 1",
                [.text(table)])
            return (0..<rows.count).compactMap { rows.string($0, 0) }
        }
    }

    static func decision(_ jobId: String, at time: Timestamp, digest: UInt8 = 1) -> Decision {
        var d = S.decision(jobId, .none, ok: false)
        d.app = app
        d.receivedAt = time
        d.decidedAt = time
        d.partitionAt = time
        d.verdictJSON = #"{"jobId":"\#(jobId)","at":"\#(time.rfc3339)"}"#
        d.jobDigest = [UInt8](repeating: digest, count: 32)
        return d
    }

    @Test func migration11MovesEveryRowOfSeveralDaysIntoPartitions() throws {
        let db = try Schema(upTo: 10)
        // Verdicts of several days (one long ago, one without receivedAt, one received far from its decision),
        // and risk history rows of several days.
        let verdicts: [(job: String, received: String?, decided: String)] = [
            ("old", "now() - interval '40 days'", "now() - interval '40 days'"),
            ("d3", "now() - interval '3 days'", "now() - interval '3 days' + interval '2 seconds'"),
            ("d1", "now() - interval '1 day'", "now() - interval '20 hours'"), ("none", nil, "now() - interval '2 days'"),
            ("far", "timestamptz '2001-01-01T00:00:00Z'", "now()"), ("today", "now()", "now()"),
        ]
        for v in verdicts {
            try db.connection.execute(
                """
                INSERT INTO verdicts (job_id, team_id, bundle_id, ok, verdict_json, received_at, decided_at, job_sha256)
                VALUES ($1, 'TEAM123456', 'com.example.a', false, $1, \(v.received ?? "NULL"), \(v.decided), $2)
                """, [.text(v.job), .bytes([UInt8](repeating: 7, count: 32))])
        }
        for days in [0, 2, 5, 30] {
            try db.connection.execute(
                """
                INSERT INTO device_risk_history (team_id, bundle_id, identity, job_id, score, category, factors, scored_at)
                VALUES ('TEAM123456', 'com.example.a', 'key:aa', $1, 10, 'trusted', '[]', now() - $2::int * interval '1 day')
                """, [.text("r\(days)"), .int(Int64(days))])
        }
        let before = try db.connection.execute("SELECT string_agg(id::text || job_id || scored_at::text, ',' ORDER BY id) FROM device_risk_history")
            .string(0, 0)

        #expect(try Migrator.migrate(db.connection, migrations: Migrator.bundled).contains("0011_partitioned_retention.sql"))

        #expect(try db.count("SELECT count(*) FROM verdicts") == Int64(verdicts.count))
        #expect(try db.count("SELECT count(*) FROM device_risk_history") == 4)
        // Every row is in a day partition created for it, none in DEFAULT.
        #expect(try db.count("SELECT count(*) FROM verdicts_default") == 0)
        #expect(try db.count("SELECT count(*) FROM device_risk_history_default") == 0)
        #expect(try db.connection.execute("SELECT string_agg(id::text || job_id || scored_at::text, ',' ORDER BY id) FROM device_risk_history")
            .string(0, 0) == before)
        // The partition time: receivedAt within the default bounds of the decision, else the decision's time.
        #expect(try db.count("SELECT count(*) FROM verdicts WHERE partition_at = received_at") == 4)
        #expect(try db.count("SELECT count(*) FROM verdicts WHERE job_id IN ('none', 'far') AND partition_at = decided_at") == 2)
        // Redeliveries still find every verdict, with its digest.
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: db.url))
        let keys = verdicts.map { ScopedJobId(app: Self.app, jobId: $0.job) }
        let found = try store.read(GatherRequest(jobs: keys, keyIds: [])).verdicts
        #expect(Set(found.keys) == Set(keys))
        #expect(found.values.allSatisfy { $0.jobDigest == [UInt8](repeating: 7, count: 32) })
        // The history's ids go on after the moved rows'.
        try db.connection.execute(
            """
            INSERT INTO device_risk_history (team_id, bundle_id, identity, job_id, score, category, factors, scored_at)
            VALUES ('TEAM123456', 'com.example.a', 'key:aa', 'new', 10, 'trusted', '[]', now())
            """)
        #expect(try db.count("SELECT count(DISTINCT id) FROM device_risk_history") == 5)
        #expect(try db.count("SELECT id FROM device_risk_history WHERE job_id = 'new'") > db.count("SELECT max(id) FROM device_risk_history WHERE job_id <> 'new'"))
    }

    @Test func aJobIdDecidedInOnePartitionIsFoundFromAnotherOnBothWritePaths() throws {
        let db = try Schema()
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: db.url))
        let first = Timestamp(seconds: 1_796_083_200)
        let later = first.adding(seconds: 3 * 86_400)
        for day in [first, later] {
            _ = try db.connection.execute(PartitionsTable.Create(table: "verdicts", lower: day, upper: day.adding(seconds: 86_400)))
        }
        #expect(try store.commit([Self.decision("j1", at: first)]).outcomes == [.stored])
        let attested = ScopedVerdictStoreTests.attested("j2", Self.app, digest: 1, key: 0xa)
        var a = attested
        a.partitionAt = first
        #expect(try store.commit([a]).outcomes == [.stored])
        // The same jobIds under another partition time (other content): the first decisions stand.
        var again = ScopedVerdictStoreTests.attested("j2", Self.app, digest: 9, key: 0xb)
        again.partitionAt = later
        let outcomes = try store.commit([Self.decision("j1", at: later, digest: 9), again]).outcomes
        guard case .alreadyDecided(let j1) = outcomes[0], case .alreadyDecided(let j2) = outcomes[1] else {
            Issue.record("expected both already decided, got \(outcomes)")
            return
        }
        #expect(j1.jobDigest == [UInt8](repeating: 1, count: 32))
        #expect(j2.jobDigest == [UInt8](repeating: 1, count: 32))
        #expect(try db.count("SELECT count(*) FROM verdicts") == 2)
        #expect(try db.count("SELECT count(*) FROM verdicts_p20261201_000000") == 2)
        #expect(try db.count("SELECT count(*) FROM devices") == 1)
    }

    @Test func maintenanceByAClockCreatesAheadDropsPastTheRetentionAndLosesNothingElse() throws {
        let db = try Schema()
        let start = Timestamp(seconds: 1_796_083_200 + 7 * 86_400)  // a week after the migration's days
        let clock = PartitionTestClock(start)
        let minute = PartitionPlanner.Settings(widthSeconds: 60, retentionSeconds: 180, lookbackSeconds: 60, ahead: 3)
        let registry = MetricsRegistry()
        let maintainer = PartitionMaintainer(
            settings: .init(verdicts: minute, riskHistory: minute, billingMonths: 25, interval: .seconds(60)),
            conninfo: db.url, clock: clock, registry: registry, logger: Logger(level: .error))
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: db.url))

        // A job stored before maintenance ran: no partition covers its time, the DEFAULT partition takes it.
        #expect(try store.commit([Self.decision("early", at: start)]).outcomes == [.stored])
        #expect(try db.count("SELECT count(*) FROM verdicts_default") == 1)
        let round = try maintainer.runRound()
        #expect(round.locked)
        #expect(round.created == 10)  // per table: the current minute, 3 ahead, 1 back
        // Its partition was created with the row moved into it.
        #expect(try db.count("SELECT count(*) FROM verdicts_default") == 0)
        #expect(try db.count("SELECT count(*) FROM verdicts WHERE job_id = 'early'") == 1)
        var text = registry.render()
        #expect(text.contains(#"attest_partitions_ahead{table="verdicts"} 3"#))
        #expect(text.contains(#"attest_partitions_attached{table="verdicts"} 6"#))  // the 5 created and DEFAULT
        #expect(text.contains(#"attest_partition_default_rows{table="verdicts"} 0"#))
        #expect(text.contains("attest_partition_maintenance_last_success_timestamp_seconds \(start.seconds)"))

        // Jobs every 30 s for 6 minutes, with a round after each, as the clock moves.
        var stored = ["early"]
        for step in 1...12 {
            clock.advance(seconds: 30)
            let jobId = "job-\(step)"
            #expect(try store.commit([Self.decision(jobId, at: clock.now())]).outcomes == [.stored])
            stored.append(jobId)
            try maintainer.runRound()
            // The redelivery of a job inside the window finds its stored verdict.
            let found = try store.read(GatherRequest(jobs: [ScopedJobId(app: Self.app, jobId: jobId)], keyIds: [])).verdicts
            #expect(found.first?.value.json == Self.decision(jobId, at: clock.now()).verdictJSON)
        }
        let now = clock.now()
        // Every minute partition wholly older than 3 minutes is gone, with its rows, and no other row is.
        let horizon = now.adding(seconds: -180)
        let kept = try db.connection.execute("SELECT job_id FROM verdicts ORDER BY partition_at")
        let keptJobs = (0..<kept.count).compactMap { kept.string($0, 0) }
        let expected = (0...12).filter { step in
            // A job of time t lives in the minute [floor(t), floor(t) + 60): kept while that ends after horizon.
            let t = start.adding(seconds: Int64(step) * 30)
            return PartitionPlanner.floorDiv(t.seconds, 60) * 60 + 60 > horizon.seconds
        }.map { stored[$0] }
        #expect(keptJobs == expected)
        #expect(keptJobs.count < stored.count)
        // What is left: the minutes from the oldest kept one to 3 ahead of now, and DEFAULT (empty).
        #expect(try db.partitions("verdicts") == ["verdicts_default"] + (3...9).map { "verdicts_p20261208_000\($0)00" })
        #expect(try db.count("SELECT count(*) FROM verdicts_default") == 0)
        text = registry.render()
        #expect(text.contains(#"attest_partitions_expired{table="verdicts"} 0"#))
        #expect(text.contains(#"attest_partitions_ahead{table="verdicts"} 3"#))
        #expect(text.contains(#"attest_partitions_attached{table="verdicts"} 8"#))
        #expect(text.contains(#"attest_partitions_ahead{table="device_risk_history"} 3"#))
        #expect(!text.contains("attest_partition_maintenance_failures_total 1"))
    }

    @Test func aSecondMaintainerWaitsForTheLockHolderAndStillExportsTheGauges() throws {
        let db = try Schema()
        let clock = PartitionTestClock(Timestamp(seconds: 1_796_083_200 + 7 * 86_400))
        let minute = PartitionPlanner.Settings(widthSeconds: 60, retentionSeconds: 180, lookbackSeconds: 60, ahead: 3)
        let registry = MetricsRegistry()
        let other = PartitionMaintainer(
            settings: .init(verdicts: minute, riskHistory: minute, billingMonths: 25, interval: .seconds(60)),
            conninfo: db.url, clock: clock, registry: registry, logger: Logger(level: .error))
        // This session holds the lock, as another worker's round would.
        let holder = try PGConnection(conninfo: db.url)
        try holder.execute("BEGIN")
        try holder.execute("SELECT pg_advisory_xact_lock($1::int4, hashtext(current_schema()))", [.int(Int64(PartitionMaintainer.lockKey))])
        let round = try other.runRound()
        #expect(!round.locked && round.created == 0)
        let text = registry.render()
        #expect(text.contains(#"attest_partitions_ahead{table="verdicts"} 0"#))
        #expect(text.contains(#"attest_partitions_expired{table="verdicts"} "#))
        #expect(text.contains("attest_partition_maintenance_last_success_timestamp_seconds"))
        try holder.execute("ROLLBACK")
        #expect(try other.runRound().created == 10)
    }

    /// Several apps' months, purged in chunks smaller than what expires: each round deletes up to a chunk
    /// across the apps, walking the counted devices' primary key app by app (they have no index by month).
    @Test func billingMonthsOlderThanTheRetentionAreDeletedAndNewerOnesKept() throws {
        let db = try Schema()
        let apps = [("TEAM123456", "com.example.a"), ("TEAM000001", "com.example.z"), ("TEAM123456", "com.example.b")]
        for (team, bundle) in apps {
            for month in ["2024-09-01", "2024-10-01", "2024-11-01", "2026-12-01"] {
                try db.connection.execute(
                    """
                    INSERT INTO mad_devices (team_id, bundle_id, month, identity, job_id, counted_at)
                    SELECT $1, $2, $3::date, 'key:' || g, 'j', $3::date FROM generate_series(1, 2) g
                    """, [.text(team), .text(bundle), .text(month)])
                try db.connection.execute(
                    "INSERT INTO mad_totals (team_id, bundle_id, month, devices) VALUES ($1, $2, $3::date, 2)",
                    [.text(team), .text(bundle), .text(month)])
            }
        }
        #expect(try db.count("SELECT count(*) FROM pg_indexes WHERE tablename = 'mad_devices' AND schemaname = current_schema()") == 1)
        let clock = PartitionTestClock(Timestamp(seconds: 1_796_083_200 + 3600))  // 2026-12-01T01:00Z
        let day = PartitionPlanner.Settings(widthSeconds: 86_400, retentionSeconds: 8 * 86_400, lookbackSeconds: 86_400)
        var settings = PartitionMaintainer.Settings(verdicts: day, riskHistory: day, billingMonths: 25, interval: .seconds(60))
        settings.purgeChunk = 5
        let maintainer = PartitionMaintainer(settings: settings, conninfo: db.url, clock: clock, registry: MetricsRegistry(), logger: Logger(level: .error))
        // 25 months before December 2026 is November 2024: older months go, 12 counted devices in all.
        try maintainer.runRound()
        #expect(try db.count("SELECT count(*) FROM mad_devices WHERE month < '2024-11-01'") == 7)
        try maintainer.runRound()
        try maintainer.runRound()
        for (team, bundle) in apps {
            let months = try db.connection.execute(
                "SELECT DISTINCT to_char(month, 'YYYY-MM') FROM mad_devices WHERE team_id = $1 AND bundle_id = $2 ORDER BY 1",
                [.text(team), .text(bundle)])
            #expect((0..<months.count).compactMap { months.string($0, 0) } == ["2024-11", "2026-12"], "\(team) \(bundle)")
        }
        #expect(try db.count("SELECT count(*) FROM mad_devices") == 12)
        #expect(try db.count("SELECT count(*) FROM mad_totals") == 6)
    }
}
