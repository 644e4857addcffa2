import AttestCore
import AttestJobs
@testable import DeviceIntelligence
import Foundation
import PostgresClient
import Testing
@testable import Store
@testable import Worker

/// A lane's sessions read the verdicts partitions through their indexes even where the planner believes a
/// partition empty (created ahead, or analyzed while it was), as the one being filled often is: left alone,
/// the planner scans such a partition row by row, and keeps doing so while it grows. And the batch's lookups
/// find each row by its whole key, so that no plan reads a range of rows to filter them.
@Suite struct LaneSessionPlanTests {
    typealias R = PartitionRetentionStoreTests

    /// `query`'s plan as `explain` (an EXPLAIN with its options) prints it on `connection`, line by line.
    static func plan(_ explain: String, _ query: PGQuery, on connection: PGConnection) throws -> [String] {
        let rows = try connection.execute(explain + " " + query.sql, query.binds)
        return (0..<rows.count).compactMap { rows.string($0, 0) }
    }

    @Test func theStoredVerdictProbeUsesTheIndexesOfPartitionsAnalyzedEmpty() throws {
        let db = try R.Schema()
        let day = Timestamp(seconds: 1_796_083_200)
        _ = try db.connection.execute(PartitionsTable.Create(table: "verdicts", lower: day, upper: day.adding(seconds: 86_400)))
        try db.connection.execute("ANALYZE verdicts")
        let probe = VerdictsTable.Stored(jobs: [ScopedJobId(app: R.app, jobId: "j1"), ScopedJobId(app: R.app, jobId: "j2")])
        func plan(_ connection: PGConnection) throws -> String {
            try Self.plan("EXPLAIN", probe.query, on: connection).joined(separator: "\n")
        }
        let unset = try plan(PGConnection(conninfo: db.url))
        #expect(unset.contains("Seq Scan on verdicts_p20261201_000000"), "\(unset)")  // what the settings prevent
        let lane = try plan(PGConnection(conninfo: db.url, settings: AttestStore.sessionSettings))
        #expect(!lane.contains("Seq Scan on verdicts_p"), "\(lane)")
        #expect(lane.contains("Index") && lane.contains("verdicts_p20261201_000000"), "\(lane)")
    }

    /// However many verdicts an app has in a partition, and whatever the planner estimates of them, the probe
    /// finds a jobId by its index entry: it reads no verdict to set it aside. Probed per app with the
    /// jobIds as an array, the planner took an app's verdicts for few and read all of them in each probe.
    @Test func theStoredVerdictProbeReadsNoVerdictItDoesNotLookFor() throws {
        let db = try R.Schema()
        let day = Timestamp(seconds: 1_796_083_200)
        _ = try db.connection.execute(PartitionsTable.Create(table: "verdicts", lower: day, upper: day.adding(seconds: 86_400)))
        let at = day.adding(seconds: 3_600).rfc3339
        try db.connection.execute("""
            INSERT INTO verdicts (job_id, team_id, bundle_id, ok, verdict_json, decided_at, partition_at)
            SELECT 'stored-' || g, $1, $2, true, '{}', $3::timestamptz, $3::timestamptz FROM generate_series(1, 20000) g
            UNION ALL
            SELECT 'other-' || g, 'TEAM' || (g % 300), 'com.example.other', true, '{}', $3::timestamptz, $3::timestamptz
            FROM generate_series(1, 3000) g
            """, [.text(R.app.teamId), .text(R.app.bundleId), .text(at)])
        try db.connection.execute("ANALYZE verdicts")
        let jobs = (0..<64).map { ScopedJobId(app: R.app, jobId: $0 % 2 == 0 ? "new-\($0)" : "stored-\($0)") }
        let probe = VerdictsTable.Stored(jobs: jobs)
        let lane = try PGConnection(conninfo: db.url, settings: AttestStore.sessionSettings)
        let plan = try Self.plan("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)", probe.query, on: lane).joined(separator: "\n")
        #expect(!plan.contains("Rows Removed by Filter"), "\(plan)")
        #expect(plan.contains("job_id = x.job"), "\(plan)")
        #expect(try lane.execute(probe).count == 32)
    }

    /// A lane's prepared statements keep the plans made while a table was analyzed empty (a fresh database
    /// vacuumed before its first jobs; the challenges after a quiet spell's purge) until autovacuum
    /// analyzes it again. The batch's writes must still reach each row by its key: as joins and semi-joins
    /// they read every device, challenge or risk row on every batch.
    @Test func theBatchsWritesReachEachRowByItsKeyOnTablesAnalyzedEmpty() throws {
        let db = try R.Schema()
        try db.connection.execute("ANALYZE devices, challenges, device_risk, mad_devices")
        let lane = try PGConnection(conninfo: db.url, settings: AttestStore.sessionSettings)
        /// The plan's lines, once every scan of `table` in it is checked.
        @discardableResult func expectKeyed(_ query: PGQuery, _ table: String) throws -> [String] {
            let lines = try Self.plan("EXPLAIN", query, on: lane)
            let scans = lines.indices.filter { lines[$0].contains("Scan") && lines[$0].contains(" on \(table) ") }
            #expect(!scans.isEmpty, "\(table): \(lines)")
            for i in scans {
                #expect(i + 1 < lines.count && lines[i + 1].contains("Index Cond"), "\(table): \(lines)")
            }
            return lines
        }
        let key = [UInt8](repeating: 0xa, count: 32)
        try expectKeyed(
            VerdictsTable.Decisions([
                AttestStoreTests.decision("j1", .advanced(keyId: key, counter: 2)), AttestStoreTests.decision("j2", .used(keyId: key)),
            ]).query, "devices")
        let claim = ChallengeClaim(
            jobId: "j1", teamId: R.app.teamId, bundleId: R.app.bundleId, challenge: key,
            receivedAt: Timestamp(seconds: 1_796_083_200), skewSeconds: 60)
        try expectKeyed(ChallengesTable.Consume([claim]).query, "challenges")

        var decision = AttestStoreTests.decision("j1", .none)
        decision.receivedAt = Timestamp(seconds: 1_796_083_200)
        decision.intelligence = IntelligenceChange(
            device: AppDevice(teamId: R.app.teamId, bundleId: R.app.bundleId, identity: DeviceIdentity(stored: "key:01")),
            month: "2026-12", event: DeviceEvent(Verdict(job: nil, verifiedAt: decision.receivedAt!), newKey: false),
            deviceId: "d", assessment: RiskAssessment(score: 0, factors: []), writesRisk: true, countsAsActive: false, keyId: nil)
        try expectKeyed(EventsTable.RiskCategoryChanges([decision]).query, "device_risk")
        // The month's counted devices: by the whole primary key. With 0.9.14's index by month, a plan made
        // on the table analyzed empty read the month's every counted device to filter the identity.
        let counted = MonthlyCountsTable.Counted([
            MonthlyDevice(month: AppMonth(teamId: R.app.teamId, bundleId: R.app.bundleId, month: "2026-12"), identity: DeviceIdentity(stored: "key:01"))
        ])
        let lines = try expectKeyed(counted.query, "mad_devices")
        #expect(lines.contains { $0.contains("Index Cond") && $0.contains("identity = ") }, "\(lines)")
    }

    /// Without sequential scans the whole-table read of the apps (no index serves it) costs 10¹⁰, far past
    /// `jit_above_cost`: JIT compiled it at every execution, 68 ms each, stalling the lane's batch.
    @Test func theLaneReadOfEveryAppIsNotCompiled() throws {
        let db = try R.Schema()
        func explained(_ settings: [String: String]) throws -> String {
            let connection = try PGConnection(conninfo: db.url, settings: settings)
            return try connection.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + AppsTable.All().query.sql).string(0, 0) ?? ""
        }
        #expect(!(try explained(AttestStore.sessionSettings)).contains("\"JIT\""))
        let available = try PGConnection(conninfo: db.url).execute("SELECT pg_jit_available()").bool(0, 0) == true
        if available {  // what the sessions' `jit = off` prevents
            #expect(try explained(AttestStore.sessionSettings.merging(["jit": "on"]) { $1 }).contains("\"JIT\""))
        }
    }
}
