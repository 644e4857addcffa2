import AttestCore
import AttestJobs
import Durations
import Foundation
import KafkaClient
import Lifecycle
import Observability
import PostgresClient
import Synchronization

/// The running worker: a dedicated Kafka poll thread feeding bounded buffers, batch threads that decide
/// and store (`BatchProcessor`), an idempotent producer publishing verdicts, and per-partition offset
/// tracking that stores only the finished prefix: nothing is acknowledged before its verdict is in
/// PostgreSQL and its publication is acknowledged by the broker.
///
/// Each batch thread (lane) owns a processor with its own database connection and serves a fixed share of
/// the partitions, so while one lane waits for PostgreSQL to store its batch another decides: a key's jobs
/// stay in one partition, hence in one lane and in order, and lanes race only as separate workers would,
/// which the store's compare-and-set already settles.
///
/// All intake state is one ``IntakeStateMachine`` in an ``Intake``, behind the condition lock the threads
/// wait on; its transitions return the Kafka calls and wake-ups to make, carried out outside the lock.
///
/// The worker is four components of a ``ServiceGroup`` (``services``), so its shutdown is the group's
/// reverse order: polling stops, the lanes drain, the consumer stores and commits its final offsets and
/// leaves the group, the producer flushes.
public final class WorkerService: KafkaRebalanceDelegate, @unchecked Sendable {
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

    private let settings: Settings
    private let processors: [BatchProcessor]
    /// Stamps consumed messages and times the broker and buffer stages, in the broker's wall-clock unit.
    private let clock: any Clock
    private let logger: Logger
    private let metrics: WorkerMetrics
    private let producer: KafkaProducer
    private var consumer: KafkaConsumer!
    /// Set by the components' starts, joined by their stops (the group calls them one at a time).
    private var pollThread: JoinableThread?
    private var laneThreads: [JoinableThread] = []
    /// Ends the group when the producer fails fatally (set when the producer component starts).
    private let failed = Mutex<(@Sendable (any Error) -> Void)?>(nil)
    /// Publications that must not be made on the delivery thread, or after a backoff; part of the
    /// producer component.
    private let deferred = DeferredWork(name: "publish-retry")

    private let intake: Intake

    /// - Parameters:
    ///   - processors: one per lane, each with its own store connection.
    ///   - clock: the wall clock the broker's create timestamps are compared with (the verifier's, in the worker).
    public init(
        settings: Settings, processors: [BatchProcessor], clock: any Clock, logger: Logger, metrics: WorkerMetrics
    ) throws(KafkaError) {
        precondition(!processors.isEmpty, "at least one batch processor")
        self.settings = settings
        self.processors = processors
        self.clock = clock
        let bounds = IntakeBounds(
            maxMessages: settings.maxBufferedMessages, maxBytes: settings.maxBufferedBytes,
            maxRecordBytes: settings.messageLimits.maxRetainedBytes, batchSize: settings.batchSize)
        intake = Intake(
            IntakeStateMachine(lanes: processors.count, bounds: bounds, pauseAfter: .seconds(settings.pauseAfterSeconds)),
            logger: logger)
        self.logger = logger
        self.metrics = metrics
        producer = try KafkaProducer(properties: settings.producerProperties) { error in
            metrics.errors.labels(["producer"]).increment()
            if error.isFatal { metrics.readiness.markNotReady(.broker, .producerError(error.name)) }
            logger.warning("producer error", [("error", .string(error.description))])
        }
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
            ClosureService("producer", start: { [self] failed in
                self.failed.withLock { $0 = failed }
                deferred.start()
            }, stop: { [self] in closeProducer($0) }),
            ClosureService("consumer", start: { [self] _ in try subscribe() }, stop: { [self] _ in leave() }),
            ClosureService("lanes", start: { [self] _ in startLanes() }, stop: { [self] _ in drainLanes() }),
            ClosureService("poll", start: { [self] _ in startPolling() }, stop: { [self] _ in stopPolling() }),
        ]
    }

    private func subscribe() throws(KafkaError) {
        let (metrics, logger) = (self.metrics, self.logger)
        consumer = try KafkaConsumer(
            properties: settings.consumerProperties, topics: settings.topics, delegate: self, limits: settings.messageLimits
        ) { error in
            metrics.readiness.markNotReady(.broker, .consumerError(error.name))
            logger.warning("consumer error", [("error", .string(error.description))])
        }
        intake.consumer = consumer
        metrics.readiness.markReady(.broker)
        // Weak: the registry holds this closure, and the service holds the registry through its metrics.
        metrics.registry.onCollect { [weak self] in
            guard let self else { return }
            let metrics = self.metrics  // not the enclosing `metrics`, which the closure would hold strongly
            let inFlight = intake.locked { $0.inFlight }
            metrics.inFlight.set(Double(inFlight))
            // Unknown (no statistics yet, or a document that did not parse): the last figures stay.
            if let lag = consumer.storedLag() { metrics.recordLag(lag) }
            if let sent = consumer.requestCounts() { metrics.recordRequests(client: "consumer", sent) }
            if let sent = self.producer.requestCounts() { metrics.recordRequests(client: "producer", sent) }
        }
    }

    private func startLanes() {
        laneThreads = processors.indices.map { lane in JoinableThread(name: "batch-\(lane)") { [self] in batchLoop(lane: lane) } }
    }

    private func startPolling() {
        pollThread = JoinableThread(name: "kafka-poll") { [self] in pollLoop() }
        logger.info("worker started", [("topics", .array(settings.topics.map(JSONValue.string)))])
    }

    /// Stops polling (the first step of the shutdown) and joins the poll thread.
    private func stopPolling() {
        stop()
        pollThread?.join()
        metrics.readiness.markNotReady(.broker, .stopping)
    }

    /// Waits until the lanes have finished the buffered jobs and every publication is acknowledged, then
    /// joins them. A lane held by PostgreSQL holds this stop past the deadline, where the group gives up
    /// naming the lanes, so no offset is stored after the deadline.
    private func drainLanes() {
        if pollThread == nil {
            // The shutdown came before polling started: nothing more will be polled.
            stop()
            intake.apply { $0.pollStopped() }
        }
        intake.waitUntilDrained()
        for thread in laneThreads { thread.join() }
    }

    /// Stores the offsets finished so far, commits them and leaves the group.
    private func leave() {
        intake.apply { $0.finalOffsets() }
        do {
            try consumer.commitSync()
        } catch {
            logger.warning("final commit failed", [("error", .string(error.description))])
        }
        consumer.close()
    }

    /// Flushes what is still queued (at most 5 s, and not past the deadline), then closes, which ends a
    /// publication waiting for room, and drops the deferred ones (nothing is left once drained).
    private func closeProducer(_ deadline: ContinuousClock.Instant) {
        let left = max(.zero, min(.seconds(5), deadline - .now))
        producer.close(timeoutMs: Int32(left.wholeMilliseconds))
        deferred.stop()
        logger.info("worker stopped")
    }

    /// Stops polling; a lane retrying an outage gives its batch up (redelivered later) instead of holding
    /// the shutdown.
    private func stop() {
        intake.apply { $0.stop() }
        for processor in processors { processor.store.cancelRetries() }
    }

    // MARK: Poll thread

    private func pollLoop() {
        while intake.nextPoll() {
            let room = intake.room()
            var messages = consumer.poll(max: max(1, min(1000, room)), timeoutMs: 100)
            guard !messages.isEmpty else { continue }
            metrics.readiness.markReady(.broker)
            let consumedMs = wallMilliseconds()
            for i in messages.indices {
                messages[i].consumedMs = consumedMs
                metrics.consumed.labels([messages[i].topic]).increment()
                observeStage("broker", since: messages[i].timestampMs, now: consumedMs)
            }
            intake.apply { $0.received(messages) }
        }
        intake.apply { $0.pollStopped() }
    }

    // MARK: Batch threads

    private func batchLoop(lane: Int) {
        // Lane 0's connection checked the schema at start: that time is no batch's.
        _ = processors[lane].store.takeDatabaseTime()
        while let batch = intake.nextBatch(lane: lane) {
            metrics.batchSize.observe(Double(batch.count))
            let started = ContinuousClock.now
            let startedMs = wallMilliseconds()
            for message in batch { observeStage("buffer", since: message.consumedMs, now: startedMs) }
            var timings = BatchTimings()
            guard let outbound = processWithRetries(batch[...], processors[lane], &timings) else {
                abandon(batch)
                continue
            }
            let took = ContinuousClock.now - started
            metrics.batchSeconds.observe(took)
            metrics.batchDatabaseSeconds.observe(processors[lane].store.takeDatabaseTime())
            // Each job waits for its whole batch: every stage is observed once per job.
            let deciding = max(.zero, took - timings.reading - timings.storing)
            for (stage, duration) in [("reading", timings.reading), ("deciding", deciding), ("storing", timings.storing)] {
                let histogram = metrics.stageSeconds.labels([stage])
                for _ in batch { histogram.observe(duration) }
            }
            let charged = outbound.map { out in
                var out = out
                out.charge = Outbound.chargeFor(out)
                return out
            }
            intake.apply { $0.charged(charged.reduce(0) { $0 + $1.charge }) }
            for out in charged { publish(out) }
        }
        intake.apply { $0.laneStopped() }
    }

    /// The clock's wall time in milliseconds, the unit of the broker's create timestamps.
    private func wallMilliseconds() -> Int64 { clock.now().microseconds / 1000 }

    /// A stage that began at `startMs` (a message's create time, the producer's wall clock, or when it was
    /// consumed); none without one, and a start ahead of `now` counts zero.
    private func observeStage(_ stage: String, since startMs: Int64?, now: Int64) {
        guard let startMs else { return }
        metrics.stageSeconds.labels([stage]).observe(Double(max(0, now &- startMs)) / 1000)
    }

    /// Transient database failures (an outage, a read-only standby, a deadlock, a timeout) are retried
    /// inside the store on fresh connections for as long as they last, so what reaches here is a value
    /// PostgreSQL refuses, a shutdown, or a batch fault that retrying may cure (counter races that did not
    /// settle), retried here with backoff. A refused value is isolated by halving the batch until the job
    /// that brings it stands alone: that job is answered unstorable and dead-lettered
    /// (``BatchProcessor/unstorable(_:_:)``), its neighbours are stored as usual. Nil when stopping: the
    /// batch was not stored and is redelivered. Every attempt's reads and commits add to `timings`.
    private func processWithRetries(
        _ batch: ArraySlice<KafkaMessage>, _ processor: BatchProcessor, _ timings: inout BatchTimings
    ) -> [Outbound]? {
        var backoff = Backoff(initial: .milliseconds(50), cap: .seconds(2))
        var attempts = 0
        while true {
            do {
                return try processor.process(Array(batch), timings: &timings)
            } catch {
                if error.fault != .cancelled { metrics.errors.labels(["db"]).increment() }
                switch error.fault {
                case .cancelled:
                    return nil
                case .permanent where batch.count == 1:
                    let message = batch.first!
                    logger.error("the database refused a job; answered unstorable and dead-lettered", [
                        ("topic", .string(message.topic)), ("partition", .int(Int64(message.partition))),
                        ("offset", .int(message.offset)), ("error", .string(error.description)),
                    ] + JobHeaders(message.headers).logFields)
                    return [processor.unstorable(message, error)]
                case .permanent:
                    let middle = batch.startIndex + batch.count / 2
                    guard let first = processWithRetries(batch[..<middle], processor, &timings),
                        let second = processWithRetries(batch[middle...], processor, &timings)
                    else { return nil }
                    return first + second
                case .transient:
                    attempts += 1
                    // Once, then every 15th attempt (about every 30 s at the 2 s cap), not at the retry rate.
                    if attempts % 15 == 1 {
                        logger.warning("batch failed; retrying", [
                            ("error", .string(error.description)), ("jobs", .int(Int64(batch.count))), ("attempt", .int(Int64(attempts))),
                        ])
                    }
                    guard intake.sleepUnlessStopping(backoff.next()) else { return nil }
                }
            }
        }
    }

    /// A batch given up at shutdown: no longer in flight, its offsets unfinished (the next owner redelivers).
    private func abandon(_ batch: [KafkaMessage]) {
        intake.apply { $0.abandoned(batch) }
    }

    /// Publishes `out` until the broker acknowledges it. Every retry is counted and logged, with a capped
    /// backoff: a full local queue (deliveries are being served), or a delivery that failed transiently. A
    /// message the broker refuses for good (too large, invalid) is replaced by the smallest dead letter of
    /// its original, so its offset still finishes; the producer closing ends the attempts (the offset is not
    /// finished, so the message is redelivered).
    private func publish(_ out: Outbound, retry: Backoff = WorkerService.deliveryBackoff) {
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
                        if case .verdict = out.kind { metrics.stageSeconds.labels(["publish"]).observe(ContinuousClock.now - handed) }
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
        var letter = processors[0].smallestDeadLetter(replacing: out, error: error.name)
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

    // MARK: Rebalance (poll thread, inside librdkafka's callback)

    public func partitionsAssigned(_ partitions: [TopicPartition]) {
        intake.locked { $0.assigned(partitions) }
        logger.info("partitions assigned", [("partitions", .array(partitions.map { .string("\($0.topic)/\($0.partition)") }))])
    }

    /// Drops buffered messages of the revoked partitions (the next owner gets them), waits for the ones in
    /// the current batch to be stored and acknowledged, then stores the final offsets; the wrapper commits
    /// them before the partitions are given up.
    public func partitionsRevoked(_ partitions: [TopicPartition]) {
        if !intake.revoke(partitions, timeout: .seconds(settings.revokeTimeoutSeconds)) { logger.warning("revoked partitions before their jobs finished; they will be redelivered") }
        logger.info("partitions revoked", [("partitions", .array(partitions.map { .string("\($0.topic)/\($0.partition)") }))])
    }
}
