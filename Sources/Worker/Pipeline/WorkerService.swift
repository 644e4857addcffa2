import AttestCore
import KafkaClient
import Lifecycle
import Observability

/// The running worker, composed of the ``IntakeLoop`` (a dedicated Kafka poll thread feeding bounded
/// buffers, and the rebalance delegate), the ``LaneRunner`` (batch threads that decide and store), and the
/// ``OutboundPublisher`` (an idempotent producer publishing verdicts), around one ``Intake`` whose
/// per-partition offset tracking stores only the finished prefix: nothing is acknowledged before its
/// verdict is in PostgreSQL and its publication is acknowledged by the broker. Lanes race only as
/// separate workers would, which the store's compare-and-set already settles.
///
/// The worker is four components of a ``ServiceGroup`` (``services``), so its shutdown is the group's
/// reverse order: polling stops, the lanes drain, the consumer stores and commits its final offsets and
/// leaves the group, the producer flushes.
public final class WorkerService: Sendable {
    public struct Settings: Sendable {
        public var topics: [String]
        public var consumerProperties: [String: String]
        public var producerProperties: [String: String]
        public var batchSize: Int
        public var maxBufferedMessages: Int
        /// The same bound in bytes (`KafkaMessage.retainedBytes`), and what is copied of each record (so one
        /// record adds at most `messageLimits.maxRetainedBytes`).
        public var maxBufferedBytes: Int
        public var messageLimits: KafkaMessage.Limits
        /// How long the buffer may stay full before partitions are paused. Until then the poll thread only
        /// waits for the lanes, and librdkafka's bounded prefetch holds what follows: pausing discards that
        /// prefetch, which is fetched again on resume, so it is kept for lanes that have stopped.
        public var pauseAfterSeconds: Double
        /// How long a revoke waits for the partition's in-flight jobs before giving it up anyway.
        public var revokeTimeoutSeconds: Double = 15

        public init(
            topics: [String], consumerProperties: [String: String], producerProperties: [String: String], batchSize: Int,
            maxBufferedMessages: Int, maxBufferedBytes: Int = 128 << 20, messageLimits: KafkaMessage.Limits = .unlimited,
            pauseAfterSeconds: Double = 2
        ) {
            self.maxBufferedBytes = maxBufferedBytes
            self.messageLimits = messageLimits
            self.topics = topics
            self.consumerProperties = consumerProperties
            self.producerProperties = producerProperties
            self.batchSize = batchSize
            self.maxBufferedMessages = maxBufferedMessages
            self.pauseAfterSeconds = pauseAfterSeconds
        }
    }

    private let intake: Intake
    private let loop: IntakeLoop
    private let lanes: LaneRunner
    private let publisher: OutboundPublisher
    private let logger: Logger

    /// - Parameters:
    ///   - processors: one per lane, each with its own store connection.
    ///   - clock: the wall clock the broker's create timestamps are compared with (the verifier's, in the worker).
    public init(
        settings: Settings, processors: [BatchProcessor], clock: any Clock, logger: Logger, metrics: WorkerMetrics
    ) throws(KafkaError) {
        precondition(!processors.isEmpty, "at least one batch processor")
        let bounds = IntakeBounds(
            maxMessages: settings.maxBufferedMessages, maxBytes: settings.maxBufferedBytes,
            maxRecordBytes: settings.messageLimits.maxRetainedBytes, batchSize: settings.batchSize)
        intake = Intake(
            IntakeStateMachine(lanes: processors.count, bounds: bounds, pauseAfter: .seconds(settings.pauseAfterSeconds)),
            logger: logger)
        let stages = StageClock(clock: clock, metrics: metrics)
        publisher = try OutboundPublisher(
            properties: settings.producerProperties, intake: intake, deadLetters: processors[0], logger: logger, metrics: metrics)
        lanes = LaneRunner(
            processors: processors, intake: intake, publisher: publisher, stages: stages, logger: logger, metrics: metrics)
        loop = IntakeLoop(settings: settings, intake: intake, stages: stages, logger: logger, metrics: metrics)
        self.logger = logger
    }

    /// The worker's components in start order; a ``ServiceGroup`` stops them in reverse.
    /// - producer: created with the service; closed last, once every verdict was acknowledged or the
    ///   deadline took the rest (a fatal producer error fails it, which ends the group);
    /// - consumer: subscribes; at its stop stores the final offsets, commits and leaves the group;
    /// - lanes: the batch threads; at their stop, waited for until every job taken is acknowledged (past
    ///   the deadline the group gives up on them and the process exits);
    /// - poll: the poll thread; stopped first, which also cancels the lanes' database retries.
    public var services: [any Service] {
        [
            ClosureService("producer", start: { [self] failed in publisher.start(failed: failed) }, stop: { [self] deadline in
                publisher.close(deadline)
                logger.info("worker stopped")
            }),
            ClosureService("consumer", start: { [self] _ in try loop.subscribe() }, stop: { [self] _ in loop.leave() }),
            ClosureService("lanes", start: { [self] _ in lanes.start() }, stop: { [self] _ in
                if !loop.isPolling {
                    // The shutdown came before polling started: nothing more will be polled.
                    stop()
                    intake.apply { $0.pollStopped() }
                }
                lanes.drain()
            }),
            ClosureService("poll", start: { [self] _ in loop.startPolling() }, stop: { [self] _ in
                stop()
                loop.joinPolling()
            }),
        ]
    }

    /// Stops polling; a lane retrying an outage gives its batch up (redelivered later) instead of holding
    /// the shutdown.
    private func stop() {
        intake.apply { $0.stop() }
        lanes.cancelRetries()
    }
}
