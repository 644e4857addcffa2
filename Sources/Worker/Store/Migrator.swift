import Foundation
import PostgresClient

/// Applies the numbered SQL files of Schemas/postgres (bundled as resources) in order, each in its own
/// transaction, recording them in `schema_migrations`. Forward-only; an advisory lock makes concurrent
/// starts of several workers safe.
public struct Migrator {
    public struct Migration: Sendable {
        public let version: Int
        public let name: String
        public let sql: String

        public init(version: Int, name: String, sql: String) {
            self.version = version
            self.name = name
            self.sql = sql
        }
    }

    /// An arbitrary constant shared by every worker: the advisory lock that serialises migrations.
    static let lockKey: Int64 = 0x4174_7465_7374

    public static var bundled: [Migration] {
        get throws {
            guard let directory = Bundle.module.url(forResource: "Migrations", withExtension: nil) else {
                throw MigrationError(description: "migrations are missing from the resource bundle")
            }
            return try load(directory: directory)
        }
    }

    static func load(directory: URL) throws -> [Migration] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }
        var migrations = [Migration]()
        for file in files {
            guard let version = Int(file.prefix { $0.isNumber }) else {
                throw MigrationError(description: "migration \(file) does not start with its number")
            }
            let sql = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            migrations.append(Migration(version: version, name: file, sql: sql))
        }
        migrations.sort { $0.version < $1.version }
        for (i, migration) in migrations.enumerated() where migration.version != i + 1 {
            throw MigrationError(description: "migrations must be numbered 1, 2, 3…: found \(migration.name)")
        }
        return migrations
    }

    public struct MigrationError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Applies what is missing; returns the names applied now.
    @discardableResult
    public static func migrate(_ connection: PGConnection, migrations: [Migration]) throws(PGError) -> [String] {
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
            """)
        var applied = [String]()
        for migration in migrations {
            let done = try connection.transaction { c throws(PGError) -> Bool in
                try c.execute("SELECT pg_advisory_xact_lock($1)", [.int(lockKey)])
                let existing = try c.execute("SELECT name FROM schema_migrations WHERE version = $1", [.int(Int64(migration.version))])
                if existing.count > 0 {
                    // Same number, other file: the database followed another schema history, and carrying on
                    // would skip this migration for good.
                    guard existing.string(0, 0) == migration.name else {
                        throw PGError(
                            code: .client,
                            message: "migration \(migration.version) was applied as \(existing.string(0, 0) ?? "?"), this build has \(migration.name)")
                    }
                    return false
                }
                try c.executeScript(migration.sql)
                try c.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                    [.int(Int64(migration.version)), .text(migration.name)])
                return true
            }
            if done { applied.append(migration.name) }
        }
        return applied
    }

    /// The highest applied version, or 0 (readiness checks compare it with the bundled one).
    public static func appliedVersion(_ connection: PGConnection) throws(PGError) -> Int {
        let exists = try connection.execute("SELECT to_regclass('schema_migrations') IS NOT NULL")
        guard exists.bool(0, 0) == true else { return 0 }
        return Int(try connection.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").int(0, 0) ?? 0)
    }
}
