import PostgresClient

/// What PostgreSQL wrote, read before and after a phase of the benchmark: its WAL position and the rows
/// inserted, updated and deleted in the user tables. The differences, per job, are a job's cost to the
/// database.
enum DatabaseCost {
    /// The WAL position now, as PostgreSQL's text form of a pg_lsn.
    struct WALPosition: PGOneRowStatement {
        var query: PGQuery { "SELECT pg_current_wal_lsn()::text AS lsn" }

        struct Row: PGRowDecodable {
            let lsn: String
            init(row: PGRow) throws(PGError) { lsn = try row.decode("lsn") }
        }
    }

    /// The WAL bytes written since `lsn` (a ``WALPosition``).
    struct WALBytesSince: PGOneRowStatement {
        let lsn: String

        var query: PGQuery { "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), \(lsn)::pg_lsn)::bigint AS bytes" }

        struct Row: PGRowDecodable {
            let bytes: Int64
            init(row: PGRow) throws(PGError) { bytes = try row.decode("bytes") }
        }
    }

    /// Rows inserted, updated and deleted in the user tables so far, as the statistics collector has them:
    /// a backend reports its counts when it goes idle or exits, so the reading after a phase is taken
    /// once the worker has stopped.
    struct RowsWritten: PGOneRowStatement {
        var query: PGQuery {
            """
            SELECT coalesce(sum(n_tup_ins), 0)::bigint AS inserted, coalesce(sum(n_tup_upd), 0)::bigint AS updated,
                coalesce(sum(n_tup_del), 0)::bigint AS deleted
            FROM pg_stat_user_tables
            """
        }

        struct Row: PGRowDecodable {
            let inserted: Int64
            let updated: Int64
            let deleted: Int64
            init(row: PGRow) throws(PGError) {
                inserted = try row.decode("inserted")
                updated = try row.decode("updated")
                deleted = try row.decode("deleted")
            }

            /// Every row written.
            var total: Int64 { inserted &+ updated &+ deleted }
        }
    }
}
