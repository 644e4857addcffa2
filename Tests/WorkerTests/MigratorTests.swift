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

    /// Migration 0017: a receipt past the TOAST threshold is stored out of line as it came, no compression
    /// tried, and reads back unchanged.
    @Test func aReceiptIsStoredUncompressedAndReadsBackUnchanged() throws {
        let db = try PartitionRetentionStoreTests.Schema()
        #expect(try db.connection.execute(
            "SELECT attstorage::text FROM pg_attribute WHERE attrelid = 'devices'::regclass AND attname = 'receipt'").string(0, 0) == "e")
        // Compressible bytes, which the default storage would have compressed.
        let receipt = [UInt8](repeating: 0x30, count: 8_000)
        _ = try db.connection.execute(
            """
            INSERT INTO devices (key_id, team_id, bundle_id, public_key, environment, receipt, device_id, attested_at, last_seen_at)
            VALUES ($1, 'TEAM123456', 'com.example.a', $2, 'production', $3, 'd1', now(), now())
            """, [.bytes([UInt8](repeating: 1, count: 32)), .bytes([0x04] + [UInt8](repeating: 2, count: 64)), .bytes(receipt)])
        let row = try db.connection.execute("SELECT pg_column_size(receipt), receipt FROM devices")
        #expect(row.int(0, 0) == 8_000)
        #expect(row.bytes(0, 1) == receipt)
    }
}
