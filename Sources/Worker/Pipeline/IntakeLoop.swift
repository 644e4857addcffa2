import AttestCore
import KafkaClient
import Lifecycle
import Observability

/// The consumer side: subscribes, runs the poll thread that feeds the ``Intake`` as much as it has room
/// for, and is the consumer's rebalance delegate (librdkafka calls it on the poll thread), so assignment,
/// revocation and the last commit all see the intake the lanes and the publisher finish offsets in.
final class IntakeLoop: KafkaRebalanceDelegate, @unchecked Sendable {
    private let settings: WorkerService.Settings
    private let intake: Intake
    private let stages: StageClock
    private let logger: Logger
    private let metrics: WorkerMetrics
    /// Set by ``subscribe()`` before the poll thread starts; the group starts and stops components one at
    /// a time, so neither is written while another thread reads it.
    private var consumer: KafkaConsumer!
    private var pollThread: JoinableThread?

    init(settings: WorkerService.Settings, intake: Intake, stages: StageClock, logger: Logger, metrics: WorkerMetrics) {
        self.settings = settings
        self.intake = intake
        self.stages = stages
        self.logger = logger
        self.metrics = metrics
    }

    /// Whether the poll thread was started (a shutdown before it started has no poll thread to stop it).
    var isPolling: Bool { pollThread != nil }

    func subscribe() throws(KafkaError) {
        let (metrics, logger) = (self.metrics, self.logger)
        consumer = try KafkaConsumer(
            properties: settings.consumerProperties, topics: settings.topics, delegate: self, limits: settings.messageLimits
        ) { error in
            metrics.readiness.markNotReady(.broker, .consumerError(error.name))
            logger.warning("consumer error", [("error", .string(error.description))])
        }
        intake.consumer = consumer
        metrics.readiness.markReady(.broker)
        // Weak: the registry holds this closure, and the loop holds the registry through its metrics.
        metrics.registry.onCollect { [weak self] in
            guard let self else { return }
            let metrics = self.metrics  // not the enclosing `metrics`, which the closure would hold strongly
            metrics.inFlight.set(Double(intake.locked { $0.inFlight }))
            // Unknown (no statistics yet, or a document that did not parse): the last figures stay.
            if let lag = consumer.storedLag() { metrics.recordLag(lag) }
            if let sent = consumer.requestCounts() { metrics.recordRequests(client: "consumer", sent) }
        }
    }

    func startPolling() {
        pollThread = JoinableThread(name: "kafka-poll") { [self] in pollLoop() }
        logger.info("worker started", [("topics", .array(settings.topics.map(JSONValue.string)))])
    }

    /// Joins the poll thread, which ends at its next step once the intake is stopping.
    func joinPolling() {
        pollThread?.join()
        metrics.readiness.markNotReady(.broker, .stopping)
    }

    /// Stores the offsets finished so far, commits them and leaves the group.
    func leave() {
        intake.apply { $0.finalOffsets() }
        do {
            try consumer.commitSync()
        } catch {
            logger.warning("final commit failed", [("error", .string(error.description))])
        }
        consumer.close()
    }

    private func pollLoop() {
        while intake.nextPoll() {
            let room = intake.room()
            var messages = consumer.poll(max: max(1, min(1000, room)), timeoutMs: 100)
            guard !messages.isEmpty else { continue }
            metrics.readiness.markReady(.broker)
            let consumedMs = stages.nowMilliseconds()
            // One count per run of a topic, not per message: finding a labelled series hashes its labels.
            var runs = [(topic: String, count: Int)]()
            for i in messages.indices {
                messages[i].consumedMs = consumedMs
                if runs.last?.topic == messages[i].topic { runs[runs.count - 1].count += 1 } else { runs.append((messages[i].topic, 1)) }
                stages.observe(.broker, since: messages[i].timestampMs, now: consumedMs)
            }
            for run in runs { metrics.consumed.labels([run.topic]).increment(by: Double(run.count)) }
            intake.apply { $0.received(messages) }
        }
        intake.apply { $0.pollStopped() }
    }

    // MARK: Rebalance (poll thread, inside librdkafka's callback)

    func partitionsAssigned(_ partitions: [TopicPartition]) {
        intake.locked { $0.assigned(partitions) }
        logger.info("partitions assigned", [("partitions", .array(partitions.map { .string("\($0.topic)/\($0.partition)") }))])
    }

    /// Drops buffered messages of the revoked partitions (the next owner gets them), waits for the ones in
    /// batches to be stored and acknowledged, then stores the final offsets; the wrapper commits them
    /// before the partitions are given up.
    func partitionsRevoked(_ partitions: [TopicPartition]) {
        if !intake.revoke(partitions, timeout: .seconds(settings.revokeTimeoutSeconds)) {
            logger.warning("revoked partitions before their jobs finished; they will be redelivered")
        }
        logger.info("partitions revoked", [("partitions", .array(partitions.map { .string("\($0.topic)/\($0.partition)") }))])
    }
}
