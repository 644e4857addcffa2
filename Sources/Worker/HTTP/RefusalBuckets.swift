import Observability
import PostgresClient
import Store
import Synchronization

/// What a refused credential takes from: its client address's bucket, then the bucket of every refusal
/// (in PostgreSQL, shared by every worker: one scanner is held back by the first, many by the second). A
/// bucket found empty is remembered in this process until its Retry-After passes, and the requests refused
/// meanwhile are answered 429 from that memory: a flood of refused requests costs the database one write
/// per bucket per wait, not one per request, and never turns the shared rows into a hot spot.
public final class RefusalBuckets: Sendable {
    /// Addresses remembered at once; past it, expired entries go, and a new one is left to PostgreSQL.
    static let maxHeld = 10_000
    private let held = Mutex<[String: ContinuousClock.Instant]>([:])

    public init() {}

    /// Seconds to wait when a bucket refused (Retry-After), nil when both took a token; `address` is the
    /// client's bucket key (``ClientAddress/bucketKey(_:)``).
    func take(
        address: String, perAddress: RateLimitStore.Limit, all: RateLimitStore.Limit,
        now: ContinuousClock.Instant = .now, _ take: ChallengeEndpoint.Take
    ) throws(PGError) -> Int? {
        for (bucket, limit) in [("ip:" + address, perAddress), ("unauthenticated", all)] {
            if let until = held.withLock({ $0[bucket] }), now < until {
                let (seconds, fraction) = now.duration(to: until).components
                return Int(seconds) + (fraction > 0 ? 1 : 0)
            }
            if let retryAfter = try take(bucket, limit) {
                hold(bucket, until: now + .seconds(retryAfter), now: now)
                return retryAfter
            }
        }
        return nil
    }

    private func hold(_ bucket: String, until: ContinuousClock.Instant, now: ContinuousClock.Instant) {
        held.withLock { held in
            if held.count >= Self.maxHeld { held = held.filter { $0.value > now } }
            if held.count < Self.maxHeld { held[bucket] = until }
        }
    }
}
