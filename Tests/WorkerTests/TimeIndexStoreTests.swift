import AttestCore
import Foundation
import Observability
import PostgresClient
import Testing
@testable import Store
@testable import Worker

/// Migration 0019 against the ops/stack PostgreSQL, each test in a schema of its own: verdicts by decision
/// time through a BRIN index, made without holding the batches' inserts. A new database has it at once; an
/// existing one gets each partition's index from partition maintenance, built concurrently and attached,
/// and loses the btree only once every partition has one.
@Suite struct TimeIndexStoreTests {
    typealias R = PartitionRetentionStoreTests
    static let minute = PartitionPlanner.Settings(widthSeconds: 60, retentionSeconds: 180, lookbackSeconds: 60, ahead: 3)
    static let start = Timestamp(seconds: 1_796_083_200 + 7 * 86_400)

    static func maintainer(
        _ db: R.Schema, _ clock: PartitionTestClock, adjust: (inout PartitionMaintainer.Settings) -> Void = { _ in }
    ) -> PartitionMaintainer {
        var settings = PartitionMaintainer.Settings(verdicts: minute, riskHistory: minute, billingMonths: 25, interval: .seconds(60))
        adjust(&settings)
        return PartitionMaintainer(settings: settings, conninfo: db.url, clock: clock, registry: MetricsRegistry(), logger: Logger(level: .error))
    }

    /// Each partition of verdicts with the access method of its index by decision time attached to
    /// `verdicts_decided_brin` (nil: none attached), and the partitions that still have a btree on decided_at.
    static func timeIndexes(_ db: R.Schema) throws -> (brin: [String: String?], btrees: [String]) {
        var brin = [String: String?]()
        for partition in try db.partitions("verdicts") {
            let rows = try db.connection.execute(
                """
                SELECT am.amname::text FROM pg_inherits h JOIN pg_index x ON x.indexrelid = h.inhrelid
                    JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am am ON am.oid = c.relam
                WHERE h.inhparent = to_regclass('verdicts_decided_brin') AND x.indrelid = to_regclass($1)
                """, [.text(partition)])
            brin[partition] = rows.count == 0 ? String?.none : rows.string(0, 0)
        }
        let btrees = try db.connection.execute(
            """
            SELECT t.relname::text FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
                JOIN pg_am am ON am.oid = c.relam JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0]
            WHERE am.amname = 'btree' AND a.attname = 'decided_at' AND x.indnatts = 1
                AND t.relnamespace = current_schema()::regnamespace
            ORDER BY 1
            """)
        return (brin, (0..<btrees.count).compactMap { btrees.string($0, 0) })
    }

    static func valid(_ db: R.Schema) throws -> Bool {
        let valid: Bool? = try db.connection.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = 'verdicts_decided_brin'::regclass").bool(0, 0)
        return try #require(valid as Bool?, "verdicts_decided_brin exists")
    }

    /// A database as a group running 0.9.10 leaves it, then migrated: at 0018, its minute partitions made by
    /// maintenance, `batches` of verdicts stored (each a list of seconds after the start), then 0019 applied.
    static func upgraded(storing batches: [[Int64]]) throws -> (db: R.Schema, clock: PartitionTestClock) {
        let db = try R.Schema(upTo: 18)
        let clock = PartitionTestClock(start)
        #expect(try maintainer(db, clock).runRound().created == 10)
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: db.url))
        for batch in batches {
            let decisions = batch.map { R.decision("at-\($0)", at: start.adding(seconds: $0)) }
            #expect(try store.commit(decisions).outcomes == decisions.map { _ in .stored })
        }
        _ = try Migrator.migrate(db.connection, migrations: Migrator.bundled)
        return (db, clock)
    }

    @Test func aNewDatabaseHasItAtOnceAndEveryPartitionMadeAfterGetsOne() throws {
        let db = try R.Schema()
        #expect(try Self.valid(db))
        var indexes = try Self.timeIndexes(db)
        #expect(indexes.brin == ["verdicts_default": "brin"])
        #expect(indexes.btrees.isEmpty, "the btree went with the migration")

        let clock = PartitionTestClock(Self.start)
        let round = try Self.maintainer(db, clock).runRound()
        #expect(round.created == 10 && round.timeIndexes == 0)
        indexes = try Self.timeIndexes(db)
        #expect(indexes.brin.count == 6 && indexes.brin.values.allSatisfy { $0 == "brin" })
        #expect(indexes.btrees.isEmpty)
        // The runbook's read by decision time.
        #expect(try db.count("SELECT count(*) FROM verdicts WHERE decided_at > now() - interval '1 hour'") == 0)
    }

    @Test func anExistingDatabaseGetsEachPartitionsIndexFromMaintenanceAndLosesTheBtreeLast() throws {
        // Rows in two of the minute partitions.
        let (db, clock) = try Self.upgraded(storing: [[0, 1], [60]])
        let maintainer = Self.maintainer(db, clock)
        // The migration indexed the empty partitions only: the table's index is not valid, the btree stays.
        #expect(try !Self.valid(db))
        var indexes = try Self.timeIndexes(db)
        let filled = ["verdicts_p20261208_000000", "verdicts_p20261208_000100"]
        #expect(indexes.brin.filter { $0.value == nil }.keys.sorted() == filled)
        #expect(indexes.btrees.count == 7, "the table's btree and its 6 partitions'")

        // A build interrupted in an earlier round left an invalid index under the partition's index name.
        let name = try #require(try db.connection.execute("SELECT attest_time_index_name($1)", [.text(filled[0])]).string(0, 0))
        #expect(throws: PGError.self) {
            try db.connection.executeScript("CREATE UNIQUE INDEX CONCURRENTLY \(name) ON \(db.name).\(filled[0]) ((1))")
        }
        let invalid = "SELECT count(*) FROM pg_index WHERE NOT indisvalid AND indrelid = '\(filled[0])'::regclass"
        #expect(try db.count(invalid) == 1)

        let round = try maintainer.runRound()
        #expect(round.timeIndexes == 2)
        #expect(try Self.valid(db))
        indexes = try Self.timeIndexes(db)
        #expect(indexes.brin.count == 6 && indexes.brin.values.allSatisfy { $0 == "brin" })
        #expect(indexes.btrees.isEmpty)
        #expect(try db.count(invalid) == 0)
        // Every row is still there, and read by decision time.
        #expect(try db.count("SELECT count(*) FROM verdicts WHERE decided_at >= '2026-12-08T00:00:00Z'") == 3)
        #expect(try maintainer.runRound().timeIndexes == 0)
    }

    @Test func anotherWorkersMaintenanceLockHoldsTheBuildsBack() throws {
        let (db, clock) = try Self.upgraded(storing: [[0]])
        let maintainer = Self.maintainer(db, clock)

        // Another worker's round holds the maintenance lock (a 0.9.10 worker's takes the same one).
        let holder = try PGConnection(conninfo: db.url)
        try holder.execute("BEGIN")
        try holder.execute("SELECT pg_advisory_xact_lock($1::int4, hashtext(current_schema()))", [.int(Int64(PartitionMaintainer.lockKey))])
        #expect(try maintainer.runRound().timeIndexes == 0)
        #expect(try !Self.valid(db))
        #expect(try Self.timeIndexes(db).btrees.count == 7)
        try holder.execute("ROLLBACK")

        #expect(try maintainer.runRound().timeIndexes == 1)
        #expect(try Self.valid(db))
        #expect(try Self.timeIndexes(db).btrees.isEmpty)
    }

    @Test func aBuildWaitingBehindALongTransactionFailsAndTheNextRoundMakesIt() throws {
        let (db, clock) = try Self.upgraded(storing: [[0]])

        // A transaction of another session, older than the build, which a concurrent build waits for.
        let holder = try PGConnection(conninfo: db.url)
        try holder.execute("BEGIN")
        try holder.execute("SELECT txid_current()")
        let impatient = Self.maintainer(db, clock) {
            $0.buildLockTimeout = .seconds(1)
            $0.retryTimeout = .zero
        }
        let error = try #require(throws: PGError.self) { try impatient.runRound() }
        #expect(error.sqlState == "55P03", "\(error)")
        #expect(try !Self.valid(db))
        try holder.execute("COMMIT")

        // What the failed build left is dropped and the index made.
        #expect(try Self.maintainer(db, clock).runRound().timeIndexes == 1)
        #expect(try Self.valid(db))
        #expect(try Self.timeIndexes(db).btrees.isEmpty)
    }
}
