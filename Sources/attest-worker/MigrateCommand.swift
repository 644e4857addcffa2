import AttestCLI
import PostgresClient
import Store
import Worker

/// `attest-worker migrate`: applies the bundled SQL migrations that are missing (the worker also does this
/// at start unless ATTEST_MIGRATE_AT_START=false).
enum MigrateCommand: Subcommand {
    static let help = """
        usage: attest-worker migrate [--database-url URL] [--config FILE]

        Applies the numbered migrations bundled in this binary (Sources/Store/Migrations, linked as
        Schemas/postgres) that the database lacks, in order, each in its own transaction; safe to run from
        several processes at once. docs/UPGRADING.md says when a running group must stop first.

        \(DatabaseOptions.help)
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        let connection = try DatabaseOptions.connect(&args)
        _ = try args.positionals(max: 0)
        let applied = try Migrator.migrate(connection, migrations: Migrator.bundled)
        print(applied.isEmpty ? "schema is up to date" : "applied: \(applied.joined(separator: ", "))")
        return 0
    }
}
