import AttestCore
import Foundation
import PostgresClient
import Testing
@testable import Store
@testable import Worker

/// A lane's sessions read the verdicts partitions through their indexes even where the planner believes a
/// partition empty (created ahead, or analyzed while it was), as the one being filled often is: left alone,
/// the planner scans such a partition row by row, and keeps doing so while it grows.
@Suite struct LaneSessionPlanTests {
    typealias R = PartitionRetentionStoreTests

    @Test func theStoredVerdictProbeUsesTheIndexesOfPartitionsAnalyzedEmpty() throws {
        let db = try R.Schema()
        let day = Timestamp(seconds: 1_796_083_200)
        _ = try db.connection.execute(PartitionsTable.Create(table: "verdicts", lower: day, upper: day.adding(seconds: 86_400)))
        try db.connection.execute("ANALYZE verdicts")
        let probe = VerdictsTable.Stored(jobs: [ScopedJobId(app: R.app, jobId: "j1"), ScopedJobId(app: R.app, jobId: "j2")])
        func plan(_ connection: PGConnection) throws -> String {
            let rows = try connection.execute("EXPLAIN " + probe.query.sql, probe.query.binds)
            return (0..<rows.count).compactMap { rows.string($0, 0) }.joined(separator: "\n")
        }
        let unset = try plan(PGConnection(conninfo: db.url))
        #expect(unset.contains("Seq Scan on verdicts_p20261201_000000"), "\(unset)")  // what the settings prevent
        let lane = try plan(PGConnection(conninfo: db.url, settings: AttestStore.sessionSettings))
        #expect(!lane.contains("Seq Scan on verdicts_p"), "\(lane)")
        #expect(lane.contains("Index") && lane.contains("verdicts_p20261201_000000"), "\(lane)")
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
