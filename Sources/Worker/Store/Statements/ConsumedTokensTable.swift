import PostgresClient

/// The SQL of `consumed_tokens` (see ``ConsumedTokenStore`` for the rules it carries out).
enum ConsumedTokensTable {
    /// Spends one token in one statement: the row goes in unless it is there already (ON CONFLICT waits for
    /// a concurrent insert of the same jti to commit, then does nothing), and only while the token is live
    /// by the database's clock, the one the purge deletes by, so a purged row can never be inserted again.
    struct Consume: PGOneRowStatement {
        static let sql = """
            WITH lifetime AS (
                SELECT to_timestamp($4::bigint) + $5::bigint * interval '1 second' >= now() AS live),
            spent AS (
                INSERT INTO consumed_tokens (team_id, bundle_id, jti, expires_at)
                SELECT $1, $2, $3, to_timestamp($4::bigint) FROM lifetime WHERE live
                ON CONFLICT (team_id, bundle_id, jti) DO NOTHING
                RETURNING jti)
            SELECT CASE WHEN EXISTS (SELECT 1 FROM spent) THEN 'consumed'
                WHEN (SELECT live FROM lifetime) THEN 'already_consumed'
                ELSE 'expired' END AS outcome
            """
        let parameters: [PGValue]

        init(teamId: String, bundleId: String, jti: String, expiresAt: Int64, skewSeconds: Int64) {
            parameters = [.text(teamId), .text(bundleId), .text(jti), .int(expiresAt), .int(skewSeconds)]
        }

        struct Row: PGRowDecodable {
            let outcome: ConsumedTokenStore.Outcome

            init(row: PGRow) throws(PGError) { outcome = try row.decode("outcome") }
        }
    }

    /// Deletes up to `limit` rows whose token expired more than `retainSeconds` ago, oldest first, skipping
    /// rows another purge holds; the result is how many went.
    struct Purge: PGAffectedRowsStatement {
        static let sql = """
            DELETE FROM consumed_tokens WHERE (team_id, bundle_id, jti) IN (
                SELECT team_id, bundle_id, jti FROM consumed_tokens
                WHERE expires_at < now() - $1::bigint * interval '1 second'
                ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            """
        let parameters: [PGValue]

        init(retainSeconds: Int64, limit: Int) { parameters = [.int(retainSeconds), .int(Int64(limit))] }
    }
}

extension ConsumedTokenStore.Outcome: PGDecodable {}
