import AttestCore
import PostgresClient

/// The SQL of `consumed_tokens` (see ``ConsumedTokenStore`` for the rules it carries out).
enum ConsumedTokensTable {
    /// Spends one token in one statement: the row goes in unless it is there already (ON CONFLICT waits for
    /// a concurrent insert of the same jti to commit, then does nothing), and only while the token is live
    /// by the database's clock, the one the purge deletes by, so a purged row can never be inserted again.
    struct Consume: PGOneRowStatement {
        let teamId: String
        let bundleId: String
        let jti: String
        let expiresAt: Timestamp
        let skewSeconds: Int64

        /// `expiresAt` is the token's exp in Unix seconds; one beyond any instant (no token this worker signs)
        /// is clamped to one PostgreSQL refuses, so it fails the statement rather than the process.
        init(teamId: String, bundleId: String, jti: String, expiresAt: Int64, skewSeconds: Int64) {
            self.teamId = teamId
            self.bundleId = bundleId
            self.jti = jti
            let (microseconds, overflow) = expiresAt.multipliedReportingOverflow(by: 1_000_000)
            self.expiresAt = Timestamp(microseconds: overflow ? (expiresAt < 0 ? .min : .max) : microseconds)
            self.skewSeconds = skewSeconds
        }

        var query: PGQuery {
            """
            WITH lifetime AS (
                SELECT \(expiresAt)::timestamptz + \(skewSeconds)::bigint * interval '1 second' >= now() AS live),
            spent AS (
                INSERT INTO consumed_tokens (team_id, bundle_id, jti, expires_at)
                SELECT \(teamId), \(bundleId), \(jti), \(expiresAt)::timestamptz FROM lifetime WHERE live
                ON CONFLICT (team_id, bundle_id, jti) DO NOTHING
                RETURNING jti)
            SELECT CASE WHEN EXISTS (SELECT 1 FROM spent) THEN 'consumed'
                WHEN (SELECT live FROM lifetime) THEN 'already_consumed'
                ELSE 'expired' END AS outcome
            """
        }

        struct Row: PGRowDecodable {
            let outcome: ConsumedTokenStore.Outcome

            init(row: PGRow) throws(PGError) { outcome = try row.decode("outcome") }
        }
    }

    /// Deletes up to `limit` rows whose token expired more than `retainSeconds` ago, oldest first, skipping
    /// rows another purge holds; the result is how many went.
    struct Purge: PGAffectedRowsStatement {
        let retainSeconds: Int64
        let limit: Int

        var query: PGQuery {
            """
            DELETE FROM consumed_tokens WHERE (team_id, bundle_id, jti) IN (
                SELECT team_id, bundle_id, jti FROM consumed_tokens
                WHERE expires_at < now() - \(retainSeconds)::bigint * interval '1 second'
                ORDER BY expires_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            """
        }
    }
}

extension ConsumedTokenStore.Outcome: PGDecodable {}
