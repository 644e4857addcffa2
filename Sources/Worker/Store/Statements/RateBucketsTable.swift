import PostgresClient

/// The SQL of `http_rate_buckets` (see ``RateLimitStore``).
enum RateBucketsTable {
    /// Refills the bucket by the time since its last take and takes a token when there is one: one row,
    /// whether the bucket existed or not.
    struct Take: PGOneRowStatement {
        static let sql: String = {
            let refilled = "least($2::float8, b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)) * $3::float8 / 60)"
            return """
                INSERT INTO http_rate_buckets AS b (bucket, tokens, updated_at, granted)
                VALUES ($1, $2::float8 - 1, now(), true)
                ON CONFLICT (bucket) DO UPDATE SET
                    granted = \(refilled) >= 1,
                    tokens = \(refilled) - CASE WHEN \(refilled) >= 1 THEN 1 ELSE 0 END,
                    updated_at = now()
                RETURNING granted, greatest(1, ceil((1 - tokens) * 60 / $3::float8))::bigint AS retry_after
                """
        }()
        let parameters: [PGValue]

        init(bucket: String, _ limit: RateLimitStore.Limit) {
            parameters = [.text(bucket), .int(Int64(limit.burst)), .int(Int64(limit.perMinute))]
        }

        struct Row: PGRowDecodable {
            let granted: Bool
            /// Whole seconds until a token is available, at least 1.
            let retryAfter: Int

            init(row: PGRow) throws(PGError) {
                granted = try row.decode("granted")
                retryAfter = try row.decode("retry_after")
            }
        }
    }

    /// Deletes up to `limit` buckets idle for `idleSeconds`; the result is how many went.
    struct Purge: PGAffectedRowsStatement {
        static let sql = """
            DELETE FROM http_rate_buckets WHERE bucket IN (
                SELECT bucket FROM http_rate_buckets WHERE updated_at < now() - $1::bigint * interval '1 second'
                ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            """
        let parameters: [PGValue]

        init(idleSeconds: Int64, limit: Int) { parameters = [.int(idleSeconds), .int(Int64(limit))] }
    }
}
