import PostgresClient

/// The SQL the bench rig runs besides the worker's own: what the server's durability is, what the worker
/// stored for the run's app, and removing the run's rows from the shared database.
enum BenchRigStatements {
    /// The durability settings a run's numbers depend on.
    struct Durability: PGOneRowStatement {
        var query: PGQuery { "SELECT current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS synchronous_commit" }

        struct Row: PGRowDecodable {
            let fsync: String
            let synchronousCommit: String

            init(row: PGRow) throws(PGError) {
                fsync = try row.decode("fsync")
                synchronousCommit = try row.decode("synchronous_commit")
            }
        }
    }

    /// SHA-256 of each verdict stored for the app, to compare with what was published.
    struct VerdictDigests: PGStatement {
        let teamId: String
        let bundleId: String

        var query: PGQuery {
            """
            SELECT job_id, sha256(convert_to(verdict_json, 'UTF8')) AS digest FROM verdicts
            WHERE team_id = \(teamId) AND bundle_id = \(bundleId)
            """
        }

        struct Row: PGRowDecodable {
            let jobId: String
            let digest: [UInt8]

            init(row: PGRow) throws(PGError) {
                jobId = try row.decode("job_id")
                digest = try row.decode("digest")
            }
        }
    }

    /// Deletes the app's rows of every table, then the app (the receipt refresh tables are keyed by the
    /// devices' keys alone; every statement of the WITH sees the devices as they were before it).
    struct RemoveApp: PGCommandStatement {
        let teamId: String
        let bundleId: String

        var query: PGQuery {
            """
            WITH k AS (SELECT key_id FROM devices WHERE team_id = \(teamId) AND bundle_id = \(bundleId)),
            rr AS (DELETE FROM receipt_refresh WHERE key_id IN (SELECT key_id FROM k)),
            rm AS (DELETE FROM receipt_metrics WHERE key_id IN (SELECT key_id FROM k)),
            v AS (DELETE FROM verdicts WHERE team_id = \(teamId) AND bundle_id = \(bundleId)),
            d AS (DELETE FROM devices WHERE team_id = \(teamId) AND bundle_id = \(bundleId)),
            m AS (DELETE FROM mad_devices WHERE team_id = \(teamId) AND bundle_id = \(bundleId)),
            t AS (DELETE FROM mad_totals WHERE team_id = \(teamId) AND bundle_id = \(bundleId)),
            q AS (DELETE FROM mad_quota_events WHERE team_id = \(teamId) AND bundle_id = \(bundleId)),
            r AS (DELETE FROM device_risk WHERE team_id = \(teamId) AND bundle_id = \(bundleId)),
            h AS (DELETE FROM device_risk_history WHERE team_id = \(teamId) AND bundle_id = \(bundleId))
            DELETE FROM apps WHERE team_id = \(teamId) AND bundle_id = \(bundleId)
            """
        }

        /// The tables whose indexes a run's rows filled and its deletes left at that size.
        static let tables = [
            "receipt_refresh", "receipt_metrics", "verdicts", "devices", "mad_devices", "mad_totals", "mad_quota_events",
            "device_risk", "device_risk_history",
        ]

        /// Deletes the app's rows, then rebuilds those tables' indexes, so that each run starts from indexes
        /// the size of the rows they hold: left at the size the run's rows gave them, they priced the next
        /// run's key lookups above scans of other indexes (0.9.14 saw it on the counted devices' index by
        /// month, which migration 0021 dropped; docs/SCALING.md, "0.9.14").
        static func run(teamId: String, bundleId: String, on connection: PGConnection) throws(PGError) {
            try connection.execute(RemoveApp(teamId: teamId, bundleId: bundleId))
            for table in tables { try connection.execute("REINDEX TABLE \(table)") }
        }
    }
}
