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

    /// Migration 0018: pages of `devices` and `device_risk` keep room, so the updates every batch makes
    /// (none of which changes an indexed column) are HOT: a new version on the same page, no index entry.
    /// Filled to the brim, a page has no room and every update but those on the last page adds index entries.
    @Test func devicesAndRiskRowsAreUpdatedInPlace() throws {
        let db = try PartitionRetentionStoreTests.Schema()
        for table in ["devices", "device_risk"] {
            #expect(try db.connection.execute(
                "SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = to_regclass($1)", [.text(table)]).string(0, 0)
                == "fillfactor=70")
        }
        // Several pages of rows, a quarter of them then updated as a batch updates a device's row and its
        // risk row, in one transaction so that its own counters say how each update was written (the old
        // versions stay, so a page holds the new ones only in the room kept free).
        let rows = 400
        let tables = [
            (
                name: "devices",
                insert: """
                    INSERT INTO devices (key_id, team_id, bundle_id, public_key, environment, device_id, attested_at, last_seen_at)
                    SELECT sha256(int4send(i)), 'TEAM123456', 'com.example.a', '\\x04' || sha256(int4send(i)) || sha256(int4send(-i)),
                        'production', 'device-' || i, now(), now()
                    FROM generate_series(1, \(rows)) AS i
                    """,
                update: """
                    UPDATE devices SET counter = counter + 1, assertion_count = assertion_count + 1, last_seen_at = now()
                    WHERE get_byte(key_id, 0) < 64
                    """
            ),
            (
                name: "device_risk",
                insert: """
                    INSERT INTO device_risk (team_id, bundle_id, identity, device_id, attestations, score, category, factors, updated_at)
                    SELECT 'TEAM123456', 'com.example.a', encode(sha256(int4send(i)), 'hex'), 'device-' || i, 1, 0, 'trusted', '[]', now()
                    FROM generate_series(1, \(rows)) AS i
                    """,
                update: """
                    UPDATE device_risk SET failed_assertions = failed_assertions + 1, score = 10, updated_at = now()
                    WHERE identity < '4'
                    """
            ),
        ]
        for table in tables {
            let counts = try db.connection.transaction { tx throws(PGError) in
                _ = try tx.execute(table.insert)
                _ = try tx.execute(table.update)
                return try tx.execute(
                    """
                    SELECT pg_stat_get_xact_tuples_updated(to_regclass($1)), pg_stat_get_xact_tuples_hot_updated(to_regclass($1)),
                        (SELECT count(DISTINCT (ctid::text::point)[0]) FROM \(table.name))
                    """, [.text(table.name)])
            }
            let updated = try #require(counts.int(0, 0))
            #expect(updated > 50, "\(table.name)")
            #expect(counts.int(0, 1) == updated, "\(table.name): HOT updates")
            #expect(try #require(counts.int(0, 2)) > 4, "\(table.name): pages")
        }
    }
}
