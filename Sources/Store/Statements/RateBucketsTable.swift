import PostgresClient

/// The SQL of `http_rate_buckets` (see ``RateLimitStore``).
enum RateBucketsTable {
    /// Refills the bucket by the time since its last take and takes a token when there is one: one row,
    /// whether the bucket existed or not.
    struct Take: PGOneRowStatement {
        let bucket: String
        let limit: RateLimitStore.Limit

        init(bucket: String, _ limit: RateLimitStore.Limit) {
            self.bucket = bucket
            self.limit = limit
        }

        var query: PGQuery {
            let refilled: PGQuery =
                "least(\(limit.burst)::float8, b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)) * \(limit.perMinute)::float8 / 60)"
            return """
                INSERT INTO http_rate_buckets AS b (bucket, tokens, updated_at, granted)
                VALUES (\(bucket), \(limit.burst)::float8 - 1, now(), true)
                ON CONFLICT (bucket) DO UPDATE SET
                    granted = \(refilled) >= 1,
                    tokens = \(refilled) - CASE WHEN \(refilled) >= 1 THEN 1 ELSE 0 END,
                    updated_at = now()
                RETURNING granted, greatest(1, ceil((1 - tokens) * 60 / \(limit.perMinute)::float8))::bigint AS retry_after
                """
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
        let idleSeconds: Int64
        let limit: Int

        var query: PGQuery {
            """
            DELETE FROM http_rate_buckets WHERE bucket IN (
                SELECT bucket FROM http_rate_buckets WHERE updated_at < now() - \(idleSeconds)::bigint * interval '1 second'
                ORDER BY updated_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            """
        }
    }
}
