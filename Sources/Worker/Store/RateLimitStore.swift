import PostgresClient

/// Token buckets in PostgreSQL (`http_rate_buckets`, migration 0008), shared by every worker: one upsert per
/// take refills the bucket by the time since its last take (the database's clock, the same for all), takes a
/// token when there is one, and reports whether it did. Row locking makes concurrent takes queue, so the
/// limit holds across processes exactly.
public enum RateLimitStore {
    /// A bucket's rate and size.
    public struct Limit: Sendable, Equatable {
        public var perMinute: Int
        public var burst: Int

        public init(perMinute: Int, burst: Int) {
            precondition(perMinute > 0 && burst > 0, "rate and burst must be positive")
            self.perMinute = perMinute
            self.burst = burst
        }

        /// How long an empty bucket takes to fill (at most a year, so that huge settings cannot overflow).
        public var refillSeconds: Int64 {
            Int64(min((Double(burst) * 60 / Double(perMinute)).rounded(.up), 365 * 86400))
        }
    }

    /// Takes a token from `bucket`: nil when granted, else the whole seconds until one is available (for
    /// `Retry-After`, at least 1).
    static func take(_ bucket: String, _ limit: Limit, on c: PGConnection) throws(PGError) -> Int? {
        let refilled = "least($2::float8, b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)) * $3::float8 / 60)"
        let rows = try c.execute(
            """
            INSERT INTO http_rate_buckets AS b (bucket, tokens, updated_at, granted)
            VALUES ($1, $2::float8 - 1, now(), true)
            ON CONFLICT (bucket) DO UPDATE SET
                granted = \(refilled) >= 1,
                tokens = \(refilled) - CASE WHEN \(refilled) >= 1 THEN 1 ELSE 0 END,
                updated_at = now()
            RETURNING granted, greatest(1, ceil((1 - tokens) * 60 / $3::float8))::bigint
            """,
            [.text(bucket), .int(Int64(limit.burst)), .int(Int64(limit.perMinute))])
        guard rows.bool(0, 0) == false else { return nil }
        return Int(rows.int(0, 1) ?? 1)
    }

    /// Deletes up to `limit` buckets idle for `idleSeconds` (full again by then, the same as absent); returns
    /// how many.
    static func purge(idleSeconds: Int64, limit: Int, on c: PGConnection) throws(PGError) -> Int {
        try c.execute(
            """
            DELETE FROM http_rate_buckets WHERE bucket IN (
                SELECT bucket FROM http_rate_buckets WHERE updated_at < now() - $1::bigint * interval '1 second'
                ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            """,
            [.int(idleSeconds), .int(Int64(limit))]
        ).affectedRows
    }
}

extension AttestStore {
    /// Deletes the rate buckets idle for `idleSeconds`, `chunk` rows per statement; returns how many.
    public func purgeRateBuckets(idleSeconds: Int64, chunk: Int = 10_000) throws(PGError) -> Int {
        try purgeInChunks(chunk) { c, limit throws(PGError) in try RateLimitStore.purge(idleSeconds: idleSeconds, limit: limit, on: c) }
    }
}
