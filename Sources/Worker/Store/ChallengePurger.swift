import AttestCore
import Foundation
import Observability
import PostgresClient

/// Deletes, in the background, the issued challenges no job can present any more. A challenge that expired
/// longer ago than the oldest job a worker accepts (`ATTEST_MAX_JOB_AGE`) could only come with a job that is
/// rejected as `received_at_out_of_range` before its challenge is looked up; an hour more covers clocks
/// that differ. Every worker runs one; purges skip the rows another is deleting.
public final class ChallengePurger: Sendable {
    private let store: AttestStore
    private let retainSeconds: Int64
    private let interval: TimeInterval
    private let logger: Logger
    /// HTTP rate buckets idle this long are full again, the same as absent, and deleted too (an address
    /// scan must not grow the table for good).
    private let rateBucketIdleSeconds: Int64

    /// - Parameter maxJobAgeSeconds: the worker's `ATTEST_MAX_JOB_AGE`.
    /// - Parameter rateBucketIdleSeconds: the longest time any configured HTTP rate bucket takes to refill.
    public init(
        conninfo: String, maxJobAgeSeconds: Int64, rateBucketIdleSeconds: Int64 = 3600, logger: Logger,
        interval: TimeInterval = 600
    ) {
        // A connection of its own, giving up on an outage after a while (the next round tries again).
        store = AttestStore(
            connection: PGReconnectingConnection(
                conninfo: conninfo, applicationName: "attest-worker-purge", retryTimeout: .seconds(30)))
        retainSeconds = maxJobAgeSeconds + 3600
        self.interval = interval
        self.logger = logger
        self.rateBucketIdleSeconds = rateBucketIdleSeconds
    }

    /// Purges now and then every `interval`, on a detached thread for the life of the process.
    public func start() {
        Thread.detachNewThread { [self] in
            while true {
                do throws(PGError) {
                    let deleted = try store.purgeChallenges(retainSeconds: retainSeconds)
                    if deleted > 0 { logger.info("expired challenges deleted", [("rows", .int(Int64(deleted)))]) }
                    let buckets = try store.purgeRateBuckets(idleSeconds: rateBucketIdleSeconds)
                    if buckets > 0 { logger.info("idle rate buckets deleted", [("rows", .int(Int64(buckets)))]) }
                } catch {
                    logger.warning("challenge purge failed", [("error", .string(error.description))])
                }
                Thread.sleep(forTimeInterval: interval)
            }
        }
    }
}
