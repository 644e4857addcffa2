import PostgresClient

/// The SQL of `schema_migrations` (see ``Migrator``); the migrations themselves are scripts, not statements.
enum SchemaMigrationsTable {
    struct Create: PGCommandStatement {
        var query: PGQuery {
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
            """
        }
    }

    /// Serialises migrations across workers until the transaction ends.
    struct Lock: PGCommandStatement {
        let key: Int64

        var query: PGQuery { "SELECT pg_advisory_xact_lock(\(key))" }
    }

    /// The name a version was applied as; no row when it was not.
    struct Applied: PGOptionalRowStatement {
        let version: Int

        var query: PGQuery { "SELECT name FROM schema_migrations WHERE version = \(version)" }

        struct Row: PGRowDecodable {
            let name: String
            init(row: PGRow) throws(PGError) { name = try row.decode("name") }
        }
    }

    struct Record: PGCommandStatement {
        let version: Int
        let name: String

        var query: PGQuery { "INSERT INTO schema_migrations (version, name) VALUES (\(version), \(name))" }
    }

    /// Whether the table exists yet.
    struct Exists: PGOneRowStatement {
        var query: PGQuery { "SELECT to_regclass('schema_migrations') IS NOT NULL AS present" }

        struct Row: PGRowDecodable {
            let present: Bool
            init(row: PGRow) throws(PGError) { present = try row.decode("present") }
        }
    }

    /// The highest applied version, 0 when none is.
    struct Latest: PGOneRowStatement {
        var query: PGQuery { "SELECT coalesce(max(version), 0) AS version FROM schema_migrations" }

        struct Row: PGRowDecodable {
            let version: Int
            init(row: PGRow) throws(PGError) { version = try row.decode("version") }
        }
    }
}
