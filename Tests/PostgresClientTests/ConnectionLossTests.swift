import Dispatch
import PostgresClient
import Synchronization
import Testing

@Suite("Connection loss and reconnection")
struct ConnectionLossTests {
    @Test("a terminated backend makes the next call throw isConnectionLost")
    func terminatedBackend() throws {
        let db = try TestDatabase.connect()
        let pid = try #require(try db.execute("SELECT pg_backend_pid()").int(0, 0))
        #expect(db.isHealthy)
        try TestDatabase.terminateBackend(pid)

        let error = #expect(throws: PGError.self) { try db.execute("SELECT 1") }
        #expect(error?.isConnectionLost == true)
        #expect(error?.code == .connectionLost)
        #expect(!db.isHealthy)
        // Calls after the loss keep failing the same way instead of hanging.
        let again = #expect(throws: PGError.self) { try db.pipeline([("SELECT 1", [])]) }
        #expect(again?.isConnectionLost == true)
        let transaction = #expect(throws: PGError.self) { try db.transaction { _ throws(PGError) in 1 } }
        #expect(transaction?.isConnectionLost == true)
    }

    @Test("a backend terminated before a pipeline is detected there too")
    func terminatedBeforePipeline() throws {
        let db = try TestDatabase.connect()
        let pid = try #require(try db.execute("SELECT pg_backend_pid()").int(0, 0))
        try TestDatabase.terminateBackend(pid)
        let error = #expect(throws: PGError.self) {
            try db.pipeline([("BEGIN", []), ("SELECT 1", []), ("COMMIT", [])])
        }
        #expect(error?.isConnectionLost == true)
        #expect(!db.isHealthy)
    }

    @Test("PGReconnectingConnection recovers on a fresh connection")
    func reconnects() throws {
        let reconnecting = PGReconnectingConnection(
            conninfo: try TestDatabase.conninfo(), retryTimeout: .seconds(10))
        let first = try reconnecting.run { connection throws(PGError) in
            try connection.execute("SELECT pg_backend_pid()").int(0, 0)
        }
        try TestDatabase.terminateBackend(try #require(first))

        var attempts = 0
        let second = try reconnecting.run { connection throws(PGError) in
            attempts += 1
            return try connection.execute("SELECT pg_backend_pid()").int(0, 0)
        }
        #expect(attempts == 2)
        #expect(second != nil && second != first)
    }

    @Test("PGReconnectingConnection rethrows permanent errors at once")
    func permanentErrorsAreNotRetried() throws {
        let reconnecting = PGReconnectingConnection(conninfo: try TestDatabase.conninfo())
        var attempts = 0
        let error = #expect(throws: PGError.self) {
            try reconnecting.run { connection throws(PGError) in
                attempts += 1
                try connection.execute("SELECT $1::int", [.text("98765432109876")])
            }
        }
        #expect(error?.sqlState == "22003")
        #expect(attempts == 1)
        // The connection survives a statement error and is reused.
        #expect(try reconnecting.run { connection throws(PGError) in try connection.execute("SELECT 1").int(0, 0) } == 1)
    }

    @Test("PGReconnectingConnection replaces a connection left inside a transaction")
    func replacesDirtyConnection() throws {
        let reconnecting = PGReconnectingConnection(conninfo: try TestDatabase.conninfo())
        let first = try reconnecting.run { connection throws(PGError) in
            try connection.execute("BEGIN")
            return try connection.execute("SELECT pg_backend_pid()").int(0, 0)
        }
        let second = try reconnecting.run { connection throws(PGError) in
            try connection.execute("SELECT pg_backend_pid()").int(0, 0)
        }
        #expect(second != nil && second != first)
    }

    @Test("PGReconnectingConnection gives up at its retry timeout")
    func givesUp() throws {
        let retries = Mutex<[(attempt: Int, wait: Duration)]>([])
        let reconnecting = PGReconnectingConnection(
            conninfo: "postgresql://postgres@127.0.0.1:1/attest", maxBackoff: .milliseconds(100),
            retryTimeout: .seconds(2),
            onRetry: { error, attempt, wait in
                #expect(error.code == .connectionFailed)
                retries.withLock { $0.append((attempt, wait)) }
            })
        var attempts = 0
        let start = ContinuousClock.now
        let error = #expect(throws: PGError.self) {
            try reconnecting.run { _ throws(PGError) in attempts += 1 }
        }
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .connectionFailed)
        #expect(error?.isConnectionLost == true)
        #expect(attempts == 0)  // the body never ran: no connection was ever made
        #expect(elapsed >= .milliseconds(1850) && elapsed < .seconds(6), "\(elapsed)")
        // 50 ms, 100 ms, then capped at 100 ms until the next wait would pass the timeout; the timeout is long
        // against a connect's own time on a loaded machine, so the count does not hang on it.
        let waits = retries.withLock { $0 }
        #expect(waits.count >= 4)
        #expect(waits.map(\.attempt) == Array(1...waits.count))
        #expect(waits.prefix(3).map(\.wait) == [.milliseconds(50), .milliseconds(100), .milliseconds(100)])
    }

    @Test("cancel() stops a run that would retry forever")
    func cancelStopsRetrying() throws {
        let reconnecting = PGReconnectingConnection(conninfo: "postgresql://postgres@127.0.0.1:1/attest")
        // Dispatch threads, not the test's: the run below blocks this one.
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) { reconnecting.cancel() }
        let start = ContinuousClock.now
        let error = #expect(throws: PGError.self) {
            try reconnecting.run { _ throws(PGError) in }
        }
        #expect(error?.code == .cancelled)
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(throws: PGError.self) { try reconnecting.run { _ throws(PGError) in } }
    }
}
