import PostgresClient

/// The SQL of `schema_migrations` (see ``Migrator``); the migrations themselves are scripts, not statements.
enum SchemaMigrationsTable {
    struct Create: PGCommandStatement {
        static let sql = """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
            """
    }

    /// Serialises migrations across workers until the transaction ends.
    struct Lock: PGCommandStatement {
        static let sql = "SELECT pg_advisory_xact_lock($1)"
        let parameters: [PGValue]

        init(key: Int64) { parameters = [.int(key)] }
    }

    /// The name a version was applied as; no row when it was not.
    struct Applied: PGOptionalRowStatement {
        static let sql = "SELECT name FROM schema_migrations WHERE version = $1"
        let parameters: [PGValue]

        init(version: Int) { parameters = [.int(Int64(version))] }

        struct Row: PGRowDecodable {
            let name: String
            init(row: PGRow) throws(PGError) { name = try row.decode("name") }
        }
    }

    struct Record: PGCommandStatement {
        static let sql = "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)"
        let parameters: [PGValue]

        init(version: Int, name: String) { parameters = [.int(Int64(version)), .text(name)] }
    }

    /// Whether the table exists yet.
    struct Exists: PGOneRowStatement {
        static let sql = "SELECT to_regclass('schema_migrations') IS NOT NULL AS present"

        struct Row: PGRowDecodable {
            let present: Bool
            init(row: PGRow) throws(PGError) { present = try row.decode("present") }
        }
    }

    /// The highest applied version, 0 when none is.
    struct Latest: PGOneRowStatement {
        static let sql = "SELECT coalesce(max(version), 0) AS version FROM schema_migrations"

        struct Row: PGRowDecodable {
            let version: Int
            init(row: PGRow) throws(PGError) { version = try row.decode("version") }
        }
    }
}
