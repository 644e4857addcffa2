import AttestCore
import Lifecycle
import Observability
import PostgresClient

/// Deletes, in the background, the issued challenges no job can present any more. A challenge that expired
/// longer ago than the oldest job a worker accepts (`ATTEST_MAX_JOB_AGE`) could only come with a job that is
/// rejected as `received_at_out_of_range` before its challenge is looked up; an hour more covers clocks
/// that differ. Spent limited-use tokens go too, once their token is refused as expired anyway
/// (``ConsumedTokenStore``). Every worker runs one; purges skip the rows another is deleting. A component of the
/// worker's group: its stop waits for a purge in progress.
public final class ChallengePurger: Service {
    public let name = "challenge purger"
    /// Purges now and then every interval.
    private let task: PeriodicTask
    /// Its own connection, cancelled on stop so a purge waiting out an outage does not hold the shutdown.
    private let connection: PGReconnectingConnection

    /// - Parameter maxJobAgeSeconds: the worker's `ATTEST_MAX_JOB_AGE`.
    /// - Parameter rateBucketIdleSeconds: the longest time any configured HTTP rate bucket takes to refill.
    ///   Buckets idle this long are full again, the same as absent, and deleted too (an address scan must
    ///   not grow the table for good).
    /// - Parameter tokenSkewSeconds: the skew allowance the consumption endpoint grants a token past its exp
    ///   (`ATTEST_MAX_FUTURE_SKEW`).
    public init(
        conninfo: String, maxJobAgeSeconds: Int64, rateBucketIdleSeconds: Int64 = 3600, tokenSkewSeconds: Int64 = 60,
        logger: Logger, interval: Duration = .seconds(600)
    ) {
        // A connection of its own, giving up on an outage after a while (the next round tries again).
        connection = PGReconnectingConnection(conninfo: conninfo, applicationName: "attest-worker-purge", retryTimeout: .seconds(30))
        let store = AttestStore(connection: connection)
        let retainSeconds = maxJobAgeSeconds + 3600
        task = PeriodicTask(name: "purger", every: interval) {
            Self.purge(
                store, retainSeconds: retainSeconds, rateBucketIdleSeconds: rateBucketIdleSeconds, tokenSkewSeconds: tokenSkewSeconds,
                logger: logger)
        }
    }

    /// Purges now and then every `interval`, on a thread of its own.
    public func start(failed: @escaping @Sendable (any Error) -> Void) { task.start() }

    /// Cancels the connection's retries and waits for a purge in progress (work the database accepts still
    /// finishes; the next worker's purger deletes what this one did not).
    public func stop(deadline: ContinuousClock.Instant) {
        connection.cancel()
        task.stop()
    }

    /// One round: failures are logged, and the next round tries again.
    private static func purge(
        _ store: AttestStore, retainSeconds: Int64, rateBucketIdleSeconds: Int64, tokenSkewSeconds: Int64, logger: Logger
    ) {
        do throws(PGError) {
            let deleted = try store.purgeChallenges(retainSeconds: retainSeconds)
            if deleted > 0 { logger.info("expired challenges deleted", [("rows", .int(Int64(deleted)))]) }
            let buckets = try store.purgeRateBuckets(idleSeconds: rateBucketIdleSeconds)
            if buckets > 0 { logger.info("idle rate buckets deleted", [("rows", .int(Int64(buckets)))]) }
            let tokens = try store.purgeConsumedTokens(skewSeconds: tokenSkewSeconds)
            if tokens > 0 { logger.info("expired consumed tokens deleted", [("rows", .int(Int64(tokens)))]) }
        } catch {
            logger.warning("challenge purge failed", [("error", .string(error.description))])
        }
    }
}
