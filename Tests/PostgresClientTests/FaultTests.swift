import PostgresClient
import Synchronization
import Testing

@Suite("Fault classification and retry policy")
struct FaultTests {
    static func server(_ sqlState: String) -> PGError { PGError(code: .server, sqlState: sqlState, message: "m") }

    @Test("outages, conflicts, resources, timeouts and operator actions are transient", arguments: [
        "25006", "25P03", "25P04", "40001", "40P01", "40003", "53000", "53100", "53200", "53300", "53400", "55P03",
        "55006", "57014", "57P01", "57P02", "57P03", "57P05", "58000", "58030", "08000", "08006", "08P01", "0A000",
        "25P02", "42P01", "42703", "XX000", "P0001", "F0000",
    ])
    func transient(sqlState: String) {
        #expect(Self.server(sqlState).fault == .transient, "\(sqlState)")
    }

    @Test("values the job brings are permanent", arguments: [
        "21000", "22001", "22003", "22007", "22008", "22021", "22P02", "22P05", "23502", "23503", "23505", "23514",
        "23P01", "54000", "54001",
    ])
    func permanent(sqlState: String) {
        #expect(Self.server(sqlState).fault == .permanent, "\(sqlState)")
    }

    @Test("client-side codes: lost connections retry, an unsendable value is the job's, cancel stops")
    func clientCodes() {
        #expect(PGError(code: .connectionLost, message: "m", isConnectionLost: true).fault == .transient)
        #expect(PGError(code: .connectionFailed, message: "m", isConnectionLost: true).fault == .transient)
        // A FATAL 57P01 (terminated backend) arrives with the connection gone.
        #expect(PGError(code: .connectionLost, sqlState: "57P01", message: "m", isConnectionLost: true).fault == .transient)
        #expect(PGError(code: .invalidParameter, message: "m").fault == .permanent)
        #expect(PGError(code: .cancelled, message: "m").fault == .cancelled)
        for code in [PGError.Code.client, .transactionMisuse, .unsupportedStatement, .invalidConnectionString] {
            #expect(PGError(code: code, message: "m").fault == .transient, "\(code)")
        }
        // Unknown or malformed SQLSTATEs are not trusted to be the job's fault.
        #expect(Self.server("ZZ999").fault == .transient)
        #expect(Self.server("22").fault == .transient)
    }

    @Test("summaries and labels are short and bounded")
    func summaries() {
        #expect(Self.server("25006").summary == "read-only (25006)")
        #expect(Self.server("40P01").summary == "deadlock (40P01)")
        #expect(Self.server("57014").summary == "statement timeout or cancel (57014)")
        #expect(Self.server("53xyz").summary == "server")
        #expect(Self.server("58P01").summary == "system error (58P01)")
        #expect(Self.server("ZZ999").summary == "error (ZZ999)")
        #expect(PGError(code: .connectionLost, message: "m", isConnectionLost: true).summary == "unreachable")
        #expect(Self.server("40P01").faultClass == "40")
        #expect(Self.server("not-a-state").faultClass == "server")
        #expect(PGError(code: .connectionFailed, message: "m", isConnectionLost: true).faultClass == "connection")
    }

    @Test("real server errors classify as their class says")
    func realErrors() throws {
        let db = try TestDatabase.connect()
        let outOfRange = #expect(throws: PGError.self) { try db.execute("SELECT $1::int", [.text("98765432109876")]) }
        #expect(outOfRange?.fault == .permanent)
        try db.execute("CREATE TEMP TABLE checked (n int CHECK (n > 0))")
        let check = #expect(throws: PGError.self) { try db.execute("INSERT INTO checked VALUES (-1)") }
        #expect(check?.sqlState == "23514" && check?.fault == .permanent)
        let readOnly = #expect(throws: PGError.self) {
            try db.transaction { c throws(PGError) in
                try c.execute("SET TRANSACTION READ ONLY")
                try c.execute("CREATE TABLE \(TestDatabase.uniqueName("ro"))(n int)")
            }
        }
        #expect(readOnly?.sqlState == "25006" && readOnly?.fault == .transient)
        let timeout = #expect(throws: PGError.self) {
            try db.transaction { c throws(PGError) in
                try c.execute("SET LOCAL statement_timeout = 50")
                try c.execute("SELECT pg_sleep(2)")
            }
        }
        #expect(timeout?.sqlState == "57014" && timeout?.fault == .transient)
    }

    @Test("backoff doubles up to its cap and starts over after a reset")
    func backoff() {
        var backoff = Backoff(initial: .milliseconds(50), cap: .milliseconds(300))
        #expect((0..<6).map { _ in backoff.next() } == [50, 100, 200, 300, 300, 300].map { .milliseconds($0) })
        backoff.reset()
        #expect(backoff.next() == .milliseconds(50))
        var wide = Backoff(initial: .seconds(1), cap: .seconds(1))
        #expect(wide.next() == .seconds(1) && wide.next() == .seconds(1))
    }

    @Test("a read-only session's 25006 is retried on a fresh connection, and the recovery reported")
    func transientServerErrorRetriedOnAFreshConnection() throws {
        let failures = Mutex<[String]>([])
        let recoveries = Mutex<[Int]>([])
        let reconnecting = PGReconnectingConnection(
            conninfo: try TestDatabase.conninfo(), initialBackoff: .milliseconds(10), retryTimeout: .seconds(10),
            onRetry: { error, _, _ in failures.withLock { $0.append(error.sqlState ?? "") } },
            onRecovered: { retries in recoveries.withLock { $0.append(retries) } })
        let table = TestDatabase.uniqueName("fresh")
        var pids: [Int64] = []
        try reconnecting.run { c throws(PGError) in
            pids.append(try c.execute("SELECT pg_backend_pid()").int(0, 0) ?? 0)
            // Only this session is read-only: the retry must not reuse it.
            if pids.count == 1 { try c.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY") }
            try c.execute("CREATE TABLE \(table) (n int)")
        }
        try TestDatabase.connect().execute("DROP TABLE \(table)")
        #expect(pids.count == 2 && pids[0] != pids[1])
        #expect(failures.withLock { $0 } == ["25006"])
        #expect(recoveries.withLock { $0 } == [1])
        // Succeeding at once reports no recovery.
        try reconnecting.run { c throws(PGError) in try c.execute("SELECT 1") }
        #expect(recoveries.withLock { $0 } == [1])
    }

    @Test("after cancel() a healthy connection still serves, a failure is not retried")
    func cancelEndsRetriesNotWork() throws {
        let reconnecting = PGReconnectingConnection(conninfo: try TestDatabase.conninfo(), initialBackoff: .milliseconds(10))
        try reconnecting.run { c throws(PGError) in try c.execute("SELECT 1") }
        reconnecting.cancel()
        #expect(try reconnecting.run { c throws(PGError) in try c.execute("SELECT 1").int(0, 0) } == 1)
        var attempts = 0
        let error = #expect(throws: PGError.self) {
            try reconnecting.run { _ throws(PGError) in
                attempts += 1
                throw PGError(code: .server, sqlState: "40P01", message: "deadlock")
            }
        }
        #expect(error?.code == .cancelled)
        #expect(attempts == 1)
    }
}
