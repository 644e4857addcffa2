import Foundation
import PostgresClient
import Store
import Testing
import Worker

/// The migrator against the ops/stack PostgreSQL, in a schema of its own so the shared database is untouched.
@Suite struct MigratorTests {
    @Test func appliesOnceAndRefusesAVersionAppliedUnderAnotherName() throws {
        let url = try #require(ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"], "run ops/stack up and eval \"$(ops/stack env)\"")
        let schema = "migrator_\(UInt32.random(in: 0...UInt32.max))"
        let admin = try PGConnection(conninfo: url)
        try admin.execute("CREATE SCHEMA \(schema)")
        defer { _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
        let connection = try PGConnection(conninfo: url + (url.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(schema)")

        let first = [Migrator.Migration(version: 1, name: "0001_first.sql", sql: "CREATE TABLE one (x int)")]
        #expect(try Migrator.migrate(connection, migrations: first) == ["0001_first.sql"])
        #expect(try Migrator.migrate(connection, migrations: first) == [])
        #expect(try Migrator.appliedVersion(connection) == 1)

        let other = [Migrator.Migration(version: 1, name: "0001_other.sql", sql: "CREATE TABLE other (x int)")]
        let error = #expect(throws: PGError.self) { try Migrator.migrate(connection, migrations: other) }
        #expect(error?.message.contains("applied as 0001_first.sql") == true)
        #expect(try connection.execute("SELECT to_regclass('other') IS NULL").bool(0, 0) == true)
    }
}
