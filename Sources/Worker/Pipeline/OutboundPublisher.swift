import AttestCore
import AttestJobs
import Durations
import Foundation
import KafkaClient
import Lifecycle
import Observability
import PostgresClient
import Synchronization

/// The worker's producer side: publishes each decided batch's outbound chains until the broker
/// acknowledges them, and only then finishes their source offsets in the ``Intake``, which is what makes
/// an offset storable. Retries (a full local queue, a failed delivery), the chain's next message and the
/// replacement of a refused one run on its ``DeferredWork`` thread, never on librdkafka's delivery thread,
/// which must keep serving reports for the queue to drain.
final class OutboundPublisher: Sendable {
    private let producer: KafkaProducer
    private let intake: Intake
    /// Builds the replacement of a message the broker refuses for good.
    private let deadLetters: BatchProcessor
    private let logger: Logger
    private let metrics: WorkerMetrics
    /// Ends the group when the producer fails fatally (set at ``start(failed:)``).
    private let failed = Mutex<(@Sendable (any Error) -> Void)?>(nil)
    /// Publications that must not be made on the delivery thread, or after a backoff.
    private let deferred = DeferredWork(name: "publish-retry")

    init(
        properties: [String: String], intake: Intake, deadLetters: BatchProcessor, logger: Logger, metrics: WorkerMetrics
    ) throws(KafkaError) {
        self.intake = intake
        self.deadLetters = deadLetters
        self.logger = logger
        self.metrics = metrics
        producer = try KafkaProducer(properties: properties) { error in
            metrics.errors.labels(["producer"]).increment()
            if error.isFatal { metrics.readiness.markNotReady(.broker, .producerError(error.name)) }
            logger.warning("producer error", [("error", .string(error.description))])
        }
    }

    func start(failed: @escaping @Sendable (any Error) -> Void) {
        self.failed.withLock { $0 = failed }
        deferred.start()
        // Weak: the registry holds this closure, and the publisher holds the registry through its metrics.
        metrics.registry.onCollect { [weak self] in
            guard let self, let sent = producer.requestCounts() else { return }
            self.metrics.recordRequests(client: "producer", sent)
        }
    }

    /// Flushes what is still queued (at most 5 s, and not past the deadline), then closes, which ends a
    /// publication waiting for room, and drops the deferred ones (nothing is left once drained).
    func close(_ deadline: ContinuousClock.Instant) {
        let left = max(.zero, min(.seconds(5), deadline - .now))
        producer.close(timeoutMs: Int32(left.wholeMilliseconds))
        deferred.stop()
    }

    /// Publishes `out` until the broker acknowledges it. Every retry is counted and logged, with a capped
    /// backoff: a full local queue (deliveries are being served), or a delivery that failed transiently. A
    /// message the broker refuses for good (too large, invalid) is replaced by the smallest dead letter of
    /// its original, so its offset still finishes; the producer closing ends the attempts (the offset is not
    /// finished, so the message is redelivered).
    func publish(_ out: Outbound, retry: Backoff = OutboundPublisher.deliveryBackoff) {
        var queueFull = 0
        var queueBackoff = Backoff(initial: .milliseconds(5), cap: .milliseconds(500))
        while true {
            let handed = ContinuousClock.now
            do {
                try producer.produce(
                    topic: out.topic, partition: out.partition, key: out.key, value: out.value, headers: out.headers
                ) { [self] result in
                    switch result {
                    case .success:
                        if case .verdict = out.kind { metrics.stage(.publish).observe(ContinuousClock.now - handed) }
                        delivered(out)
                    case .failure(let error): deliveryFailed(out, error, retry: retry)
                    }
                }
                return
            } catch {
                if case .reply = out.kind, error.rejectsMessage || error.refusesDestination { return replyRefused(out, error) }
                if error.rejectsMessage { return refused(out, error) }
                if error.isFatal || error.code == KafkaError.Code.state {
                    if error.isFatal {
                        logger.error("producer failed fatally", [("error", .string(error.description))])
                        failed.withLock { $0 }?(error)
                    }
                    return
                }
                queueFull += 1
                metrics.publishRetries.labels([error.name]).increment()
                if queueFull == 1 || queueFull % 100 == 0 {
                    logger.warning("cannot queue a message; retrying", [
                        ("error", .string(error.description)), ("attempt", .int(Int64(queueFull))), ("topic", .string(out.topic)),
                    ])
                }
                Thread.sleep(forTimeInterval: queueBackoff.next().timeInterval)
            }
        }
    }

    /// `out` is acknowledged: the next of its chain is published, or the last one finishes the offset.
    private func delivered(_ out: Outbound) {
        guard !out.then.isEmpty else { return finished(out) }
        var chained = out.then[0]
        chained.then += out.then.dropFirst()
        chained.charge = out.charge
        let next = chained
        // Not from the delivery callback: a full queue would wait for this very thread.
        deferred.submit { [self] in publish(next) }
    }

    /// A reply the broker refuses (no such topic or partition, not allowed to write, too large): skipped,
    /// logged and counted, never retried nor replaced, so a job naming a bad destination cannot hold its
    /// partition; its verdict is already on the verdicts topic.
    private func replyRefused(_ out: Outbound, _ error: KafkaError) {
        metrics.repliesRefused.labels(["refused"]).increment()
        let jobId = out.headers.first { $0.name == JobHeaders.jobId }.map { String(decoding: $0.value, as: UTF8.self) } ?? ""
        logger.warning("no reply: the broker refused it", [
            ("jobId", .string(jobId)), ("topic", .string(out.topic)), ("partition", out.partition.map { .int(Int64($0)) } ?? .null),
            ("error", .string(error.description)),
        ] + JobHeaders(out.original.headers).logFields)
        delivered(out)
    }

    /// A delivery report's failure (on the producer's thread, which must not wait): refused for good, given
    /// up because the producer is closing, or produced again after a capped backoff. A reply the broker
    /// refuses is the job's producer's doing (it named the destination), counted as a refused reply and not
    /// as a producer error, so naming missing topics cannot page the operator (AttestProducerErrors).
    private func deliveryFailed(_ out: Outbound, _ error: KafkaError, retry: Backoff) {
        if case .reply = out.kind, error.rejectsMessage || error.refusesDestination { return replyRefused(out, error) }
        metrics.errors.labels(["producer"]).increment()
        if error.rejectsMessage { return refused(out, error) }
        if error.code == KafkaError.Code.purgedQueue || error.code == KafkaError.Code.purgedInFlight { return }
        metrics.publishRetries.labels([error.name]).increment()
        var next = retry
        let delay = next.next().timeInterval
        let retry = next
        logger.warning("delivery failed; producing again", [
            ("error", .string(error.description)), ("delayMs", .int(Int64(delay * 1000))),
            ("topic", .string(out.topic)),
        ] + JobHeaders(out.original.headers).logFields)
        deferred.submit(after: .seconds(delay)) { [self] in publish(out, retry: retry) }
    }

    /// The broker (or librdkafka's own size check) refused `out` for good: publish the smallest dead letter
    /// of its original instead, once; if even that is refused, the offset finishes without one (logged).
    private func refused(_ out: Outbound, _ error: KafkaError) {
        metrics.publishRefused.labels([error.name]).increment()
        let fields: [(String, JSONValue)] = [
            ("error", .string(error.description)), ("topic", .string(out.topic)), ("bytes", .int(Int64(out.value.count))),
            ("sourceTopic", .string(out.source.topic)), ("sourcePartition", .int(Int64(out.source.partition))),
            ("sourceOffset", .int(out.sourceOffset)),
        ] + JobHeaders(out.original.headers).logFields
        if case .smallestDeadLetter = out.kind {
            logger.error("the broker refused the smallest dead letter; the message is skipped", fields)
            finished(out)
            return
        }
        logger.error("the broker refused the message; publishing the smallest dead letter instead", fields)
        // Not on the delivery thread, which must keep serving reports for the local queue to drain.
        var letter = deadLetters.smallestDeadLetter(replacing: out, error: error.name)
        letter.charge = out.charge
        let replacement = letter
        deferred.submit { [self] in publish(replacement) }
    }

    /// Failed deliveries of one message are produced again after 100 ms, doubling up to 5 s.
    static let deliveryBackoff = Backoff(initial: .milliseconds(100), cap: .seconds(5))

    /// The broker acknowledged the message published for `out.source`/`out.sourceOffset`.
    private func finished(_ out: Outbound) {
        intake.apply { $0.finished(out.source, offset: out.sourceOffset, retainedBytes: out.original.retainedBytes + out.charge) }
    }
}
