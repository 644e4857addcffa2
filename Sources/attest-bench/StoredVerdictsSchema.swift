import AttestCore
import PostgresClient
import Store

/// A database schema of `attest-bench lane`'s own, migrated, whose `verdicts` hold the days a group keeps:
/// `days` day partitions before today's, each with `rows` verdicts of another app, then today's and 3 ahead
/// empty (what a worker's maintenance creates with the defaults) and DEFAULT. A batch looks each new jobId up
/// in every one of these partitions, and the benchmark's usual database, with its few rows, shows little
/// of that cost (docs/SCALING.md, "Verdict partitions").
struct StoredVerdictsSchema {
    let name: String
    private let admin: PGReconnectingConnection

    /// Partitions after today's, as `PartitionPlanner`'s default `ahead`.
    static let ahead = 3

    /// Creates and migrates the schema and fills its past partitions (`now` fixes which day is today).
    init(databaseURL: String, runId: String, days: Int, rows: Int, now: Timestamp) throws {
        name = "bench_lane_\(runId)"
        admin = PGReconnectingConnection.bench(databaseURL)
        let create = "CREATE SCHEMA \(name)"
        try admin.run { c throws(PGError) in _ = try c.execute(create) }
        let connection = PGReconnectingConnection.bench(databaseURL, settings: settings(AttestStore.sessionSettings))
        let today = Timestamp(seconds: now.seconds - now.seconds % 86_400)
        do {
            let migrations = try Migrator.bundled
            try connection.run { c throws(PGError) in
                _ = try Migrator.migrate(c, migrations: migrations)
                for day in -days...Self.ahead {
                    let lower = today.adding(seconds: Int64(day) * 86_400)
                    _ = try c.execute(PartitionsTable.Create(table: "verdicts", lower: lower, upper: lower.adding(seconds: 86_400)))
                    if day < 0, rows > 0 { try c.execute(StoredVerdictsStatements.Fill(day: lower, rows: rows)) }
                }
                // Vacuumed too, so that autovacuum does not wake for the rows in the middle of the run.
                try c.execute(StoredVerdictsStatements.Vacuum())
            }
        } catch {
            try? drop()
            throw error
        }
    }

    /// `base` with this schema first on the search path.
    func settings(_ base: [String: String]) -> [String: String] {
        base.merging(["search_path": name]) { _, schema in schema }
    }

    /// Drops the schema with everything the run stored in it.
    func drop() throws(PGError) {
        let drop = "DROP SCHEMA \(name) CASCADE"
        try admin.run { c throws(PGError) in _ = try c.execute(drop) }
    }
}

/// The statements of ``StoredVerdictsSchema`` besides the partitions (``PartitionsTable/Create``) and the
/// schema itself (its name is made from a run id of hex digits, never from input).
enum StoredVerdictsStatements {
    /// `rows` accepted assertions' verdicts of an app no run uses, spread over the day from `day`, each
    /// with a verdict document of a real one's size.
    struct Fill: PGCommandStatement {
        let day: Timestamp
        let rows: Int

        var query: PGQuery {
            """
            INSERT INTO verdicts (job_id, kind, key_id, team_id, bundle_id, ok, verdict_json, received_at, decided_at,
                job_sha256, partition_at)
            SELECT 'stored-' || \(day.seconds)::int8 || '-' || g, 'assertion', md5(g::text), 'BENCHSTORE', 'bench.lane.stored', true,
                repeat('x', 700), t, t, sha256(int8send(g)), t
            FROM generate_series(1, \(Int64(rows))::int8) AS g,
                LATERAL (SELECT \(day)::timestamptz + (g % 86400) * interval '1 second' AS t) AS at
            """
        }
    }

    struct Vacuum: PGCommandStatement {
        var query: PGQuery { "VACUUM (ANALYZE) verdicts" }
    }
}
