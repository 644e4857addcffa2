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
    public static func take(_ bucket: String, _ limit: Limit, on c: PGConnection) throws(PGError) -> Int? {
        let taken = try c.execute(RateBucketsTable.Take(bucket: bucket, limit))
        return taken.granted ? nil : taken.retryAfter
    }

    /// Deletes up to `limit` buckets idle for `idleSeconds` (full again by then, the same as absent); returns
    /// how many.
    static func purge(idleSeconds: Int64, limit: Int, on c: PGConnection) throws(PGError) -> Int {
        try c.execute(RateBucketsTable.Purge(idleSeconds: idleSeconds, limit: limit))
    }
}

extension AttestStore {
    /// Deletes the rate buckets idle for `idleSeconds`, `chunk` rows per statement; returns how many.
    public func purgeRateBuckets(idleSeconds: Int64, chunk: Int = 10_000) throws(PGError) -> Int {
        try purgeInChunks(chunk) { c, limit throws(PGError) in try RateLimitStore.purge(idleSeconds: idleSeconds, limit: limit, on: c) }
    }
}
