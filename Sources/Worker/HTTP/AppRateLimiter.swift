import Synchronization

/// A token bucket per app, in memory: each app may take `burst` challenges at once and `perMinute` on
/// average. Per process, so N workers admit up to N times the rate; a limit for abuse, not for billing.
public final class AppRateLimiter: Sendable {
    struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    public let perMinute: Int
    public let burst: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    public init(perMinute: Int, burst: Int) {
        precondition(perMinute > 0 && burst > 0, "rate and burst must be positive")
        self.perMinute = perMinute
        self.burst = burst
    }

    /// Takes one token for `app`: nil when granted, else the whole seconds until one is available (for
    /// `Retry-After`).
    public func take(_ app: String, at now: ContinuousClock.Instant = .now) -> Int? {
        let perSecond = Double(perMinute) / 60
        return buckets.withLock { buckets in
            var bucket = buckets[app] ?? Bucket(tokens: Double(burst), updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(Double(burst), bucket.tokens + max(0, seconds) * perSecond)
            bucket.updated = now
            defer { buckets[app] = bucket }
            guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up))) }
            bucket.tokens -= 1
            return nil
        }
    }

    /// Drops `app`'s bucket (the app turned out not to be registered), so unknown names cannot grow the table.
    public func forget(_ app: String) {
        _ = buckets.withLock { $0.removeValue(forKey: app) }
    }
}
