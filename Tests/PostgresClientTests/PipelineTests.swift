@testable import PostgresClient
import Testing

@Suite("Pipeline mode")
struct PipelineTests {
    @Test("1000 inserts in one transaction, one pipeline, results in order")
    func thousandInserts() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE batch (n bigint PRIMARY KEY, payload bytea, note text)")
        var statements: [(sql: String, params: [PGValue])] = [("BEGIN", [])]
        for n in 0..<1000 {
            statements.append(
                ("INSERT INTO batch VALUES ($1, $2, $3) RETURNING n", [.int(Int64(n)), .bytes([UInt8(n % 256), 0]), .text("n=\(n)")]))
        }
        statements.append(("COMMIT", []))
        let results = try db.pipeline(statements)
        #expect(results.count == 1002)
        #expect(results.first?.commandTag == "BEGIN")
        #expect(results.last?.commandTag == "COMMIT")
        for n in 0..<1000 {
            #expect(results[n + 1].int(0, 0) == Int64(n))
            #expect(results[n + 1].affectedRows == 1)
        }
        #expect(db.isHealthy)
        let check = try db.execute("SELECT count(*), sum(n), count(DISTINCT note) FROM batch")
        #expect(check.int(0, 0) == 1000)
        #expect(check.int(0, 1) == 499_500)  // 0 + 1 + … + 999
        #expect(check.int(0, 2) == 1000)
        #expect(try db.execute("SELECT payload FROM batch WHERE n = 513").bytes(0, 0) == [1, 0])
    }

    @Test("a failing statement aborts the batch and the transaction rolls back")
    func failureAbortsBatch() throws {
        let db = try TestDatabase.connect()
        let table = TestDatabase.uniqueName("pipeline_abort")
        try db.execute("CREATE TABLE \(table) (n int PRIMARY KEY)")
        defer { _ = try? db.execute("DROP TABLE \(table)") }
        let error = #expect(throws: PGError.self) {
            try db.pipeline([
                ("BEGIN", []),
                ("INSERT INTO \(table) VALUES ($1)", [.int(1)]),
                ("INSERT INTO \(table) VALUES ($1)", [.int(2)]),
                ("INSERT INTO \(table) VALUES ($1)", [.int(1)]),  // duplicate: fails
                ("INSERT INTO \(table) VALUES ($1)", [.int(3)]),  // skipped by the server
                ("COMMIT", []),
            ])
        }
        #expect(error?.sqlState == "23505")
        #expect(error?.isConnectionLost == false)
        // Rolled back, and the connection is back outside any transaction.
        #expect(db.isHealthy)
        #expect(try db.execute("SELECT count(*) FROM \(table)").int(0, 0) == 0)
        try db.execute("INSERT INTO \(table) VALUES (7)")
        // Seen from another session: nothing of the failed batch, the later autocommit insert.
        let other = try TestDatabase.connect()
        #expect(try other.execute("SELECT array_agg(n) FROM \(table)").string(0, 0) == "{7}")
    }

    @Test("without BEGIN the batch is still one implicit transaction")
    func implicitTransaction() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE implicit (n int PRIMARY KEY)")
        let error = #expect(throws: PGError.self) {
            try db.pipeline([
                ("INSERT INTO implicit VALUES (1)", []),
                ("INSERT INTO implicit VALUES (1)", []),
            ])
        }
        #expect(error?.sqlState == "23505")
        #expect(try db.execute("SELECT count(*) FROM implicit").int(0, 0) == 0)
        #expect(try db.pipeline([("INSERT INTO implicit VALUES (1)", []), ("INSERT INTO implicit VALUES (2)", [])]).count == 2)
        #expect(try db.execute("SELECT count(*) FROM implicit").int(0, 0) == 2)
    }

    @Test("inside transaction(), a failed pipeline leaves the rollback to the transaction")
    func insideTransaction() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE nested (n int PRIMARY KEY)")
        let error = #expect(throws: PGError.self) {
            try db.transaction { connection throws(PGError) in
                try connection.execute("INSERT INTO nested VALUES (100)")
                _ = try connection.pipeline([
                    ("INSERT INTO nested VALUES (1)", []),
                    ("INSERT INTO nested VALUES (1)", []),
                ])
            }
        }
        #expect(error?.sqlState == "23505")
        #expect(db.isHealthy)
        #expect(try db.execute("SELECT count(*) FROM nested").int(0, 0) == 0)
    }

    @Test("a bad parameter fails the batch before anything is sent")
    func badParameterSendsNothing() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE unsent (t text)")
        let error = #expect(throws: PGError.self) {
            try db.pipeline([
                ("INSERT INTO unsent VALUES ($1)", [.text("fine")]),
                ("INSERT INTO unsent VALUES ($1)", [.text("nul\u{0}")]),
            ])
        }
        #expect(error?.code == .invalidParameter)
        #expect(try db.execute("SELECT count(*) FROM unsent").int(0, 0) == 0)
        #expect(try db.pipeline([]).isEmpty)
    }

    @Test("large payloads both ways do not deadlock")
    func largePayloads() throws {
        let db = try TestDatabase.connect()
        // 64 x 256 KiB out and the same back: far beyond the socket buffers in each direction.
        let payload = (0..<(256 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let statements = (0..<64).map { n -> (sql: String, params: [PGValue]) in
            ("SELECT $1::bytea, $2::int", [.bytes(payload), .int(Int64(n))])
        }
        let results = try db.pipeline(statements)
        #expect(results.count == 64)
        #expect(results.allSatisfy { $0.bytes(0, 0) == payload })
        #expect(results.map { $0.int(0, 1) } == (0..<64).map { Int64($0) })
    }

    @Test("repeated statements are prepared once per session and executed by name")
    func preparedOnce() throws {
        let db = try TestDatabase.connect()
        let sql = "SELECT $1::int8 + 1"
        let first = try db.pipeline((0..<3).map { (sql, [PGValue.int(Int64($0))]) })
        let second = try db.pipeline([(sql, [.int(41)])])
        #expect(first.map { $0.int(0, 0) } == [1, 2, 3])
        #expect(second.first?.int(0, 0) == 42)
        let statements = try db.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement = $1", [.text(sql)])
        #expect(statements.int(0, 0) == 1)
    }

    /// The prepared statements are found by a hash of each text's length and tail only: texts that differ
    /// only further back share a bucket and must still be told apart.
    @Test("statements of one length and one ending, differing further back, are prepared apart")
    func sameTailPreparedApart() throws {
        let db = try TestDatabase.connect()
        let tail = " /*" + String(repeating: "x", count: PreparedStatements.Key.hashedTail) + "*/"
        let sqls = ["SELECT $1::int8 + 1" + tail, "SELECT $1::int8 - 1" + tail]
        let rows = try db.pipeline((0..<4).map { (sqls[$0 % 2], [PGValue.int(10)]) })
        #expect(rows.map { $0.int(0, 0) } == [11, 9, 11, 9])
        let again = try db.pipeline(sqls.map { ($0, [PGValue.int(20)]) })
        #expect(again.map { $0.int(0, 0) } == [21, 19])
        let prepared = try db.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement = ANY($1::text[])", [.array(.text(sqls))])
        #expect(prepared.int(0, 0) == 2)
    }

    @Test("a prepared statement reading a partitioned table by its partition key is planned once")
    func genericPlans() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE parted (k int, v int) PARTITION BY LIST (k)")
        for k in 0..<4 {
            try db.execute("CREATE TEMP TABLE parted_\(k) PARTITION OF parted FOR VALUES IN (\(k))")
            try db.execute("INSERT INTO parted VALUES (\(k), \(k * 10))")
        }
        let sql = "SELECT v FROM parted WHERE k = $1::int4"
        let rows = try db.pipeline((0..<8).map { (sql, [PGValue.int(Int64($0 % 4))]) })
        #expect(rows.map { $0.int(0, 0) } == [0, 10, 20, 30, 0, 10, 20, 30])
        // Left to choose, PostgreSQL would plan each of the eight afresh (custom plans), pruned to one partition.
        let plans = try db.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", [.text(sql)])
        #expect(plans.int(0, 0) == 8)
        #expect(plans.int(0, 1) == 0)
    }

    @Test("no statement is JIT-compiled, however costly the planner thinks it")
    func noJIT() throws {
        // Costs as low as they go: without the session's `jit = off` every statement would be compiled.
        let cheap = ["jit_above_cost": "0", "jit_inline_above_cost": "0", "jit_optimize_above_cost": "0"]
        func explained(_ settings: [String: String]) throws -> String {
            let db = try PGConnection(conninfo: TestDatabase.conninfo(), settings: settings)
            try db.execute("CREATE TEMP TABLE costly AS SELECT n FROM generate_series(1, 100) AS n")
            return try db.execute("EXPLAIN (ANALYZE, FORMAT JSON) SELECT sum(n * 2) FROM costly").string(0, 0) ?? ""
        }
        #expect(!(try explained(cheap)).contains("\"JIT\""))
        // The control, where this server can JIT at all (Debian's can): the same with JIT left on compiles.
        let available = try TestDatabase.connect().execute("SELECT pg_jit_available()").bool(0, 0) == true
        if available { #expect(try explained(cheap.merging(["jit": "on"]) { $1 }).contains("\"JIT\"")) }
    }

    @Test("a statement whose prepare failed is not remembered; NULL and typed parameters prepare apart")
    func failedPrepareForgotten() throws {
        let db = try TestDatabase.connect()
        let table = TestDatabase.uniqueName("prepared_late")
        let sql = "INSERT INTO \(table) VALUES ($1) RETURNING n"
        #expect(throws: PGError.self) { try db.pipeline([(sql, [.int(1)])]) }  // the table does not exist yet
        try db.execute("CREATE TEMP TABLE \(table) (n bigint)")
        let rows = try db.pipeline([(sql, [.int(1)]), (sql, [.null]), (sql, [.int(2)])])
        #expect(rows.map { $0.int(0, 0) } == [1, nil, 2])
        #expect(db.isHealthy)
    }
}
