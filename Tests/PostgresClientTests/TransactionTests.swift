import PostgresClient
import Testing

@Suite("Transactions")
struct TransactionTests {
    @Test("the body's value is returned and its writes committed")
    func commits() throws {
        let db = try TestDatabase.connect()
        let table = TestDatabase.uniqueName("tx_commit")
        try db.execute("CREATE TABLE \(table) (n int)")
        defer { _ = try? db.execute("DROP TABLE \(table)") }
        let value = try db.transaction { connection throws(PGError) in
            try connection.execute("INSERT INTO \(table) VALUES (1), (2)").affectedRows
        }
        #expect(value == 2)
        #expect(db.isHealthy)
        let other = try TestDatabase.connect()
        #expect(try other.execute("SELECT count(*) FROM \(table)").int(0, 0) == 2)
    }

    @Test("an error thrown by the body rolls back and is rethrown unchanged")
    func rollsBackOnThrow() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE tx_throw (n int)")
        let thrown = PGError(code: PGError.Code("test_abort"), message: "the body gave up")
        let error = #expect(throws: PGError.self) {
            try db.transaction { connection throws(PGError) in
                try connection.execute("INSERT INTO tx_throw VALUES (1)")
                throw thrown
            }
        }
        #expect(error?.code == PGError.Code("test_abort"))
        #expect(error?.message == "the body gave up")
        #expect(db.isHealthy)
        #expect(try db.execute("SELECT count(*) FROM tx_throw").int(0, 0) == 0)
    }

    @Test("a statement error in the body rolls back")
    func rollsBackOnStatementError() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE tx_fail (n int PRIMARY KEY)")
        let error = #expect(throws: PGError.self) {
            try db.transaction { connection throws(PGError) in
                try connection.execute("INSERT INTO tx_fail VALUES (1)")
                try connection.execute("INSERT INTO tx_fail VALUES (1)")
            }
        }
        #expect(error?.sqlState == "23505")
        #expect(try db.execute("SELECT count(*) FROM tx_fail").int(0, 0) == 0)
    }

    @Test("a body that swallows a failure does not look committed")
    func swallowedFailure() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE tx_swallow (n int PRIMARY KEY)")
        let error = #expect(throws: PGError.self) {
            try db.transaction { connection throws(PGError) in
                try connection.execute("INSERT INTO tx_swallow VALUES (1)")
                _ = try? connection.execute("INSERT INTO tx_swallow VALUES (1)")
            }
        }
        #expect(error?.code == .transactionMisuse)
        #expect(db.isHealthy)
        #expect(try db.execute("SELECT count(*) FROM tx_swallow").int(0, 0) == 0)
    }

    @Test("transaction() inside an open transaction is refused")
    func nested() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE tx_nested (n int)")
        let error = #expect(throws: PGError.self) {
            try db.transaction { outer throws(PGError) in
                try outer.execute("INSERT INTO tx_nested VALUES (1)")
                try outer.transaction { inner throws(PGError) in
                    try inner.execute("INSERT INTO tx_nested VALUES (2)")
                }
            }
        }
        #expect(error?.code == .transactionMisuse)
        #expect(try db.execute("SELECT count(*) FROM tx_nested").int(0, 0) == 0)
    }
}
