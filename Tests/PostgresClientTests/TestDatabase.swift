import Foundation
import PostgresClient
import Testing

/// The ops/stack PostgreSQL. Every test needs it and CI always starts it, so a missing URL fails the test
/// rather than skipping it: a silently skipped database suite would pass while testing nothing.
enum TestDatabase {
    static func conninfo() throws -> String {
        try #require(
            ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"],
            "ATTEST_DATABASE_URL is unset: run ops/stack up and eval \"$(ops/stack env)\"")
    }

    static func connect() throws -> PGConnection {
        try PGConnection(conninfo: conninfo(), applicationName: "postgresclient-tests")
    }

    /// A table name no concurrent test run shares, for tables other sessions must see.
    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)_\(UInt64.random(in: 0...UInt64.max))"
    }

    /// Terminates `pid` from a second connection and waits until the backend has exited.
    static func terminateBackend(_ pid: Int64) throws {
        let admin = try connect()
        // `pid` is int4 on the server and .int is sent as int8, which has no implicit cast down: hence ::int.
        let rows = try admin.execute("SELECT pg_terminate_backend($1::int, 5000)", [.int(pid)])
        try #require(rows.bool(0, 0) == true, "backend \(pid) did not exit")
    }
}
