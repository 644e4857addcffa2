import PostgresClient
import Testing

@Suite("Errors")
struct ErrorTests {
    @Test("a unique violation surfaces as SQLSTATE 23505 with its constraint")
    func uniqueViolation() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE jobs (job_id text CONSTRAINT jobs_pk PRIMARY KEY)")
        try db.execute("INSERT INTO jobs VALUES ($1)", [.text("secret-job-7")])
        let error = #expect(throws: PGError.self) {
            try db.execute("INSERT INTO jobs VALUES ($1)", [.text("secret-job-7")])
        }
        #expect(error?.code == .server)
        #expect(error?.sqlState == "23505")
        #expect(error?.constraint == "jobs_pk")
        #expect(error?.isConnectionLost == false)
        // The server's DETAIL ("Key (job_id)=(secret-job-7) already exists") is not carried.
        #expect(error.map { "\($0) \(String(reflecting: $0))" }?.contains("secret-job-7") == false)
        #expect(db.isHealthy)
        #expect(try db.execute("SELECT count(*) FROM jobs").int(0, 0) == 1)
    }

    @Test("a syntax error surfaces as SQLSTATE 42601")
    func syntaxError() throws {
        let db = try TestDatabase.connect()
        let error = #expect(throws: PGError.self) { try db.execute("SELEC 1") }
        #expect(error?.sqlState == "42601")
        #expect(error?.message == #"syntax error at or near "SELEC""#)
        #expect(db.isHealthy)
    }

    @Test("data exceptions do not echo the offending value", arguments: [
        ("SELECT $1::bigint", "secret-not-a-number", "22P02"),
        ("SELECT $1::int", "98765432109876", "22003"),
        ("SELECT $1::uuid", "secret-uuid", "22P02"),
        ("SELECT $1::timestamptz", "secret-time", "22007"),
    ])
    func dataExceptionsAreRedacted(sql: String, value: String, sqlState: String) throws {
        let db = try TestDatabase.connect()
        let error = #expect(throws: PGError.self) { try db.execute(sql, [.text(value)]) }
        #expect(error?.sqlState == sqlState)
        #expect(error?.message.isEmpty == false)
        #expect(error.map { String(reflecting: $0) }?.contains(value) == false, "\(String(describing: error))")
    }

    @Test("statements more than one per call are refused")
    func oneStatementPerCall() throws {
        let db = try TestDatabase.connect()
        let error = #expect(throws: PGError.self) { try db.execute("SELECT 1; SELECT 2") }
        #expect(error?.sqlState == "42601")
    }

    @Test("COPY is refused and the connection stays usable")
    func copyIsRefused() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE copied (n int)")
        let copyIn = #expect(throws: PGError.self) { try db.execute("COPY copied FROM STDIN") }
        #expect(copyIn?.code == .unsupportedStatement)
        let copyOut = #expect(throws: PGError.self) { try db.execute("COPY (SELECT generate_series(1, 1000)) TO STDOUT") }
        #expect(copyOut?.code == .unsupportedStatement)
        #expect(db.isHealthy)
        #expect(try db.execute("SELECT 42").int(0, 0) == 42)
    }

    @Test("a connection string that does not parse is not repeated in the error")
    func invalidConnectionString() throws {
        let error = #expect(throws: PGError.self) {
            try PGConnection(conninfo: "host=127.0.0.1 password=s3cret-pw s3cret-tail")
        }
        #expect(error?.code == .invalidConnectionString)
        #expect(error?.isConnectionLost == false)
        #expect(error.map { String(reflecting: $0) }?.contains("s3cret") == false)
    }

    @Test("a refused connection is retriable and does not show the password")
    func connectionRefused() throws {
        let error = #expect(throws: PGError.self) {
            // Port 1 on loopback: nothing listens there.
            try PGConnection(conninfo: "postgresql://attest:s3cret-pw@127.0.0.1:1/attest")
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.isConnectionLost == true)
        #expect(error?.sqlState == nil)
        #expect(error.map { String(reflecting: $0) }?.contains("s3cret") == false)
    }

    /// `sslmode` and the other libpq TLS settings travel in ATTEST_DATABASE_URL untouched: the test server
    /// has no TLS, so `require` must fail to connect and `disable` must not.
    @Test func sslmodeFromTheConnectionStringReachesLibpq() throws {
        let base = try TestDatabase.conninfo()
        let separator = base.contains("?") ? "&" : "?"
        let error = #expect(throws: PGError.self) { try PGConnection(conninfo: base + separator + "sslmode=require") }
        #expect(error?.code == .connectionFailed)
        #expect(try PGConnection(conninfo: base + separator + "sslmode=disable").isHealthy)
    }
}

