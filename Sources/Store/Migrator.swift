import Foundation
import PostgresClient

/// Applies the numbered SQL files of Sources/Store/Migrations (linked as Schemas/postgres; bundled as
/// resources) in order, each in its own transaction, recording them in `schema_migrations`. Forward-only;
/// an advisory lock makes concurrent starts of several workers safe.
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
        try connection.execute(SchemaMigrationsTable.Create())
        var applied = [String]()
        for migration in migrations {
            let done = try connection.transaction { c throws(PGError) -> Bool in
                try c.execute(SchemaMigrationsTable.Lock(key: lockKey))
                if let existing = try c.execute(SchemaMigrationsTable.Applied(version: migration.version)) {
                    // Same number, other file: the database followed another schema history, and carrying on
                    // would skip this migration for good.
                    guard existing.name == migration.name else {
                        throw PGError(
                            code: .client,
                            message: "migration \(migration.version) was applied as \(existing.name), this build has \(migration.name)")
                    }
                    return false
                }
                try c.executeScript(migration.sql)
                try c.execute(SchemaMigrationsTable.Record(version: migration.version, name: migration.name))
                return true
            }
            if done { applied.append(migration.name) }
        }
        return applied
    }

    /// The highest applied version, or 0 (readiness checks compare it with the bundled one).
    public static func appliedVersion(_ connection: PGConnection) throws(PGError) -> Int {
        guard try connection.execute(SchemaMigrationsTable.Exists()).present else { return 0 }
        return try connection.execute(SchemaMigrationsTable.Latest()).version
    }
}
