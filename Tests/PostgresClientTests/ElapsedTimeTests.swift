import PostgresClient
import Testing

/// `PGReconnectingConnection.takeElapsed()`: the time a unit of work (a worker's batch) spent in `run`,
/// which `attest_batch_database_seconds` reports.
@Suite("Time spent in the database")
struct ElapsedTimeTests {
    @Test("runs add up until taken, and taking starts again from zero")
    func runsAddUp() throws {
        let reconnecting = PGReconnectingConnection(conninfo: try TestDatabase.conninfo(), retryTimeout: .seconds(10))
        #expect(reconnecting.takeElapsed() == .zero)
        for _ in 0..<2 {
            try reconnecting.run { connection throws(PGError) in _ = try connection.execute("SELECT pg_sleep(0.15)") }
        }
        let both = reconnecting.takeElapsed()
        #expect(both >= .milliseconds(300) && both < .seconds(10), "\(both)")
        #expect(reconnecting.takeElapsed() == .zero)
    }

    @Test("a run that fails counts too, and so do its retries and their waits")
    func failuresAndRetriesCount() throws {
        let reconnecting = PGReconnectingConnection(
            conninfo: try TestDatabase.conninfo(), initialBackoff: .milliseconds(400), retryTimeout: .seconds(10))
        let pid = try #require(try reconnecting.run { connection throws(PGError) in try connection.execute("SELECT pg_backend_pid()").int(0, 0) })
        _ = reconnecting.takeElapsed()
        try TestDatabase.terminateBackend(pid)
        // The first attempt finds the connection lost, waits 400 ms, then succeeds on a fresh one.
        try reconnecting.run { connection throws(PGError) in _ = try connection.execute("SELECT 1") }
        #expect(reconnecting.takeElapsed() >= .milliseconds(400))

        #expect(throws: PGError.self) {
            try reconnecting.run { connection throws(PGError) in
                _ = try connection.execute("SELECT pg_sleep(0.2)")
                _ = try connection.execute("SELECT 1/0")
            }
        }
        #expect(reconnecting.takeElapsed() >= .milliseconds(200))
    }
}
