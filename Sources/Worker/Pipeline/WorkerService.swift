import AttestCore
import AttestJobs
import Foundation
import KafkaClient
import Observability
import PostgresClient

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
/// Shared state lives behind one condition lock; Kafka calls happen outside it.
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
        public var shutdownTimeoutSeconds: Double

        public init(
            topics: [String], consumerProperties: [String: String], producerProperties: [String: String], batchSize: Int,
            maxBufferedMessages: Int, maxBufferedBytes: Int = 128 << 20, messageLimits: KafkaMessage.Limits = .unlimited,
            pauseAfterSeconds: Double = 2, shutdownTimeoutSeconds: Double
        ) {
            self.maxBufferedBytes = maxBufferedBytes
            self.messageLimits = messageLimits
            self.topics = topics
            self.consumerProperties = consumerProperties
            self.producerProperties = producerProperties
            self.batchSize = batchSize
            self.maxBufferedMessages = maxBufferedMessages
            self.pauseAfterSeconds = pauseAfterSeconds
            self.shutdownTimeoutSeconds = shutdownTimeoutSeconds
        }
    }

    private let settings: Settings
    private let processors: [BatchProcessor]
    private let logger: Logger
    private let metrics: WorkerMetrics
    private let producer: KafkaProducer
    private var consumer: KafkaConsumer!

    // Guarded by `condition`.
    private let condition = NSCondition()
    /// Per lane: messages not yet taken, from `bufferStarts[lane]` on.
    private var buffers: [[KafkaMessage]]
    private var bufferStarts: [Int]
    private var tracker = OffsetTracker()
    private var inBatch: [TopicPartition: Int] = [:]
    private var assigned: Set<TopicPartition> = []
    private var revoking: Set<TopicPartition> = []
    private var paused = false
    /// The poll thread waits on `roomFreed` for room in the buffer.
    private var roomWanted = false
    private let roomFreed = DispatchSemaphore(value: 0)
    private var pauseNewlyAssigned = false
    private var stopping = false
    private var pollStopped = false
    private var lanesRunning = 0
    private var unacknowledged = 0
    /// `retainedBytes` of the buffered messages and of the unacknowledged ones.
    private var bufferedBytes = 0
    private var unacknowledgedBytes = 0

    /// - Parameter processors: one per lane, each with its own store connection.
    public init(settings: Settings, processors: [BatchProcessor], logger: Logger, metrics: WorkerMetrics) throws(KafkaError) {
        precondition(!processors.isEmpty, "at least one batch processor")
        self.settings = settings
        self.processors = processors
        buffers = Array(repeating: [], count: processors.count)
        bufferStarts = Array(repeating: 0, count: processors.count)
        self.logger = logger
        self.metrics = metrics
        producer = try KafkaProducer(properties: settings.producerProperties) { error in
            metrics.errors.labels(["producer"]).increment()
            if error.isFatal { metrics.readiness.markNotReady("broker", reason: "producer: \(error.name)") }
            logger.warning("producer error", [("error", .string(error.description))])
        }
    }

    /// Runs until `stop()`; then shuts down in order within the deadline: stop polling, finish buffered
    /// jobs, wait for acknowledgements, store and commit offsets, leave the group, flush the producer.
    public func run() throws(KafkaError) {
        let (metrics, logger) = (self.metrics, self.logger)
        consumer = try KafkaConsumer(
            properties: settings.consumerProperties, topics: settings.topics, delegate: self, limits: settings.messageLimits
        ) { error in
            metrics.readiness.markNotReady("broker", reason: "consumer: \(error.name)")
            logger.warning("consumer error", [("error", .string(error.description))])
        }
        metrics.readiness.markReady("broker")
        // Weak: the registry holds this closure, and the service holds the registry through its metrics.
        metrics.registry.onCollect { [weak self] in
            guard let self else { return }
            let metrics = self.metrics  // not the enclosing `metrics`, which the closure would hold strongly
            condition.lock()
            let inFlight = tracker.totalInFlight
            condition.unlock()
            metrics.inFlight.set(Double(inFlight))
            for (partition, lag) in consumer.lag() { metrics.lag.labels([partition.description]).set(Double(lag)) }
        }
        let pollThread = Thread { [self] in pollLoop() }
        pollThread.name = "kafka-poll"
        lanesRunning = processors.count
        pollThread.start()
        for lane in processors.indices {
            let batchThread = Thread { [self] in batchLoop(lane: lane) }
            batchThread.name = "batch-\(lane)"
            batchThread.start()
        }
        logger.info("worker started", [("topics", .array(settings.topics.map(JSONValue.string)))])

        condition.lock()
        while !stopping { condition.wait() }
        condition.unlock()
        let deadline = Date().addingTimeInterval(settings.shutdownTimeoutSeconds)
        startWatchdog(deadline: deadline)
        condition.lock()
        while !(pollStopped && lanesRunning == 0 && unacknowledged == 0) { _ = condition.wait(until: deadline) }
        let offsets = tracker.takeCommittable()
        condition.unlock()
        store(offsets)
        do {
            try consumer.commitSync()
        } catch {
            logger.warning("final commit failed", [("error", .string(error.description))])
        }
        consumer.close()
        producer.close(timeoutMs: 5000)
        logger.info("worker stopped")
    }

    /// Asks the worker to stop (signal handlers call this).
    public func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        roomFreed.signal()
        // A lane retrying an outage gives its batch up (redelivered later) instead of holding the shutdown.
        for processor in processors { processor.store.cancelRetries() }
    }

    /// After the deadline the process exits without storing more offsets: what was stored is safe, the
    /// rest is redelivered.
    private func startWatchdog(deadline: Date) {
        let logger = self.logger
        Thread.detachNewThread {
            Thread.sleep(until: deadline)
            logger.error("shutdown deadline passed; exiting")
            exit(1)
        }
    }

    // MARK: Poll thread

    private func pollLoop() {
        while true {
            condition.lock()
            let stop = stopping
            let toPause = pauseNewlyAssigned && paused ? Array(assigned) : []
            pauseNewlyAssigned = false
            condition.unlock()
            if stop { break }
            if !toPause.isEmpty { consumer.pause(toPause) }
            let room = waitForRoom()
            let messages = consumer.poll(max: max(1, min(1000, room)), timeoutMs: 100)
            guard !messages.isEmpty else { continue }
            metrics.readiness.markReady("broker")
            for message in messages { metrics.consumed.labels([message.topic]).increment() }
            condition.lock()
            for message in messages where !revoking.contains(message.topicPartition) {
                tracker.received(message.topicPartition, offset: message.offset)
                buffers[lane(of: message.topicPartition)].append(message)
                bufferedBytes += message.retainedBytes
            }
            condition.broadcast()
            condition.unlock()
        }
        condition.lock()
        pollStopped = true
        condition.broadcast()
        condition.unlock()
    }

    private var buffered: Int { zip(buffers, bufferStarts).reduce(0) { $0 + $1.0.count - $1.1 } }

    /// How many messages the buffer can take. While it is full, waits until acknowledgements have made
    /// room for a batch, up to `pauseAfterSeconds`: lanes that freed nothing for that long have stopped
    /// (PostgreSQL down, say), and then the partitions are paused and 0 is returned (polling goes on for
    /// the group's sake and serves events only).
    private func waitForRoom() -> Int {
        let deadline = DispatchTime.now() + settings.pauseAfterSeconds
        var waited = false
        while true {
            condition.lock()
            let full = !stopping && !paused && bounds.isFull(messages: count, bytes: bytes)
            if !full {
                let room = paused ? 0 : bounds.room(messages: count, bytes: bytes)
                condition.unlock()
                return room
            }
            roomWanted = true
            condition.unlock()
            if !waited {
                logger.debug("buffer full; waiting for the lanes", [("limit", .int(Int64(settings.maxBufferedMessages)))])
                waited = true
            }
            guard roomFreed.wait(timeout: deadline) == .timedOut else { continue }
            condition.lock()
            roomWanted = false
            paused = bounds.isFull(messages: count, bytes: bytes)
            let pauseNow = paused ? Array(assigned) : []
            condition.unlock()
            if !pauseNow.isEmpty {
                consumer.pause(pauseNow)
                logger.debug("paused partitions", [("buffered", .int(Int64(settings.maxBufferedMessages)))])
            }
        }
    }

    /// Buffered plus unacknowledged jobs: what the buffer limit bounds. Under the lock.
    private var count: Int { buffered + unacknowledged }
    /// The same in bytes.
    private var bytes: Int { bufferedBytes + unacknowledgedBytes }
    private var bounds: IntakeBounds {
        IntakeBounds(
            maxMessages: settings.maxBufferedMessages, maxBytes: settings.maxBufferedBytes,
            maxRecordBytes: settings.messageLimits.maxRetainedBytes, batchSize: settings.batchSize)
    }

    /// The lane serving a partition: fixed while the process runs, so a partition's jobs stay in order.
    private func lane(of partition: TopicPartition) -> Int { Int(partition.partition.magnitude) % processors.count }

    // MARK: Batch threads

    private func batchLoop(lane: Int) {
        while let batch = nextBatch(lane: lane) {
            metrics.batchSize.observe(Double(batch.count))
            let started = ContinuousClock.now
            guard let outbound = processWithRetries(batch[...], processors[lane]) else {
                abandon(batch)
                continue
            }
            metrics.batchSeconds.observe(ContinuousClock.now - started)
            for out in outbound { publish(out) }
        }
        condition.lock()
        lanesRunning -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Under the lock: once paused and the buffered plus unacknowledged jobs are down to half the limit,
    /// unpauses and returns the partitions to resume, outside the lock (the consumer's calls are
    /// thread-safe). Checked both when a batch is taken and when a job is acknowledged: the jobs in flight
    /// may be what keeps the count high after the buffers have emptied, and then only an acknowledgement
    /// can bring it down.
    private func partitionsToResume() -> [TopicPartition] {
        guard paused && bounds.resumes(messages: count, bytes: bytes) else { return [] }
        paused = false
        return Array(assigned)
    }

    /// Up to `batchSize` of the lane's buffered messages; nil once stopping and drained.
    private func nextBatch(lane: Int) -> [KafkaMessage]? {
        var resume: [TopicPartition] = []
        defer { if !resume.isEmpty { consumer.resume(resume) } }
        condition.lock()
        defer { condition.unlock() }
        while buffers[lane].count == bufferStarts[lane] {
            if stopping && pollStopped { return nil }
            condition.wait()
        }
        let start = bufferStarts[lane]
        let end = min(buffers[lane].count, start + settings.batchSize)
        let batch = Array(buffers[lane][start..<end])
        bufferStarts[lane] = end
        if end > 4096 && end * 2 > buffers[lane].count {
            buffers[lane].removeFirst(end)
            bufferStarts[lane] = 0
        }
        for message in batch { inBatch[message.topicPartition, default: 0] += 1 }
        unacknowledged += batch.count
        let batchBytes = batch.reduce(0) { $0 + $1.retainedBytes }
        bufferedBytes -= batchBytes
        unacknowledgedBytes += batchBytes
        resume = partitionsToResume()
        return batch
    }

    /// Transient database failures (an outage, a read-only standby, a deadlock, a timeout) are retried
    /// inside the store on fresh connections for as long as they last, so what reaches here is a value
    /// PostgreSQL refuses, a shutdown, or a batch fault that retrying may cure (counter races that did not
    /// settle), retried here with backoff. A refused value is isolated by halving the batch until the job
    /// that brings it stands alone: that job is answered unstorable and dead-lettered
    /// (``BatchProcessor/unstorable(_:_:)``), its neighbours are stored as usual. Nil when stopping: the
    /// batch was not stored and is redelivered.
    private func processWithRetries(_ batch: ArraySlice<KafkaMessage>, _ processor: BatchProcessor) -> [Outbound]? {
        var backoff = Backoff(initial: .milliseconds(50), cap: .seconds(2))
        var attempts = 0
        while true {
            do {
                return try processor.process(Array(batch))
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
                    ])
                    return [processor.unstorable(message, error)]
                case .permanent:
                    let middle = batch.startIndex + batch.count / 2
                    guard let first = processWithRetries(batch[..<middle], processor),
                        let second = processWithRetries(batch[middle...], processor)
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
                    guard sleepUnlessStopping(backoff.next()) else { return nil }
                }
            }
        }
    }

    /// Waits `duration` unless the worker stops first; false when stopping.
    private func sleepUnlessStopping(_ duration: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(Self.seconds(duration))
        condition.lock()
        defer { condition.unlock() }
        while !stopping, condition.wait(until: deadline) {}
        return !stopping
    }

    /// A batch given up at shutdown: no longer in flight, its offsets unfinished (the next owner redelivers).
    private func abandon(_ batch: [KafkaMessage]) {
        condition.lock()
        for message in batch { inBatch[message.topicPartition, default: 1] -= 1 }
        unacknowledged -= batch.count
        unacknowledgedBytes -= batch.reduce(0) { $0 + $1.retainedBytes }
        condition.broadcast()
        condition.unlock()
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
            do {
                try producer.produce(topic: out.topic, key: out.key, value: out.value, headers: out.headers) { [self] result in
                    switch result {
                    case .success where !out.then.isEmpty:
                        var chained = out.then[0]
                        chained.then += out.then.dropFirst()
                        let next = chained
                        // Not from the delivery callback: a full queue would wait for this very thread.
                        DispatchQueue.global().async { [self] in publish(next) }
                    case .success: finished(out)
                    case .failure(let error): deliveryFailed(out, error, retry: retry)
                    }
                }
                return
            } catch {
                if error.rejectsMessage { return refused(out, error) }
                if error.isFatal || error.code == KafkaError.Code.state {
                    if error.isFatal {
                        logger.error("producer failed fatally", [("error", .string(error.description))])
                        stop()
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
                Thread.sleep(forTimeInterval: Self.seconds(queueBackoff.next()))
            }
        }
    }

    /// A delivery report's failure (on the producer's thread, which must not wait): refused for good, given
    /// up because the producer is closing, or produced again after a capped backoff.
    private func deliveryFailed(_ out: Outbound, _ error: KafkaError, retry: Backoff) {
        metrics.errors.labels(["producer"]).increment()
        if error.rejectsMessage { return refused(out, error) }
        if error.code == KafkaError.Code.purgedQueue || error.code == KafkaError.Code.purgedInFlight { return }
        metrics.publishRetries.labels([error.name]).increment()
        var next = retry
        let delay = Self.seconds(next.next())
        let retry = next
        logger.warning("delivery failed; producing again", [
            ("error", .string(error.description)), ("delayMs", .int(Int64(delay * 1000))),
            ("topic", .string(out.topic)),
        ])
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in publish(out, retry: retry) }
    }

    /// The broker (or librdkafka's own size check) refused `out` for good: publish the smallest dead letter
    /// of its original instead, once; if even that is refused, the offset finishes without one (logged).
    private func refused(_ out: Outbound, _ error: KafkaError) {
        metrics.publishRefused.labels([error.name]).increment()
        let fields: [(String, JSONValue)] = [
            ("error", .string(error.description)), ("topic", .string(out.topic)), ("bytes", .int(Int64(out.value.count))),
            ("sourceTopic", .string(out.source.topic)), ("sourcePartition", .int(Int64(out.source.partition))),
            ("sourceOffset", .int(out.sourceOffset)),
        ]
        if case .smallestDeadLetter = out.kind {
            logger.error("the broker refused the smallest dead letter; the message is skipped", fields)
            finished(out)
            return
        }
        logger.error("the broker refused the message; publishing the smallest dead letter instead", fields)
        // Not on the delivery thread, which must keep serving reports for the local queue to drain.
        let replacement = processors[0].smallestDeadLetter(replacing: out, error: error.name)
        DispatchQueue.global().async { [self] in publish(replacement) }
    }

    /// Failed deliveries of one message are produced again after 100 ms, doubling up to 5 s.
    static let deliveryBackoff = Backoff(initial: .milliseconds(100), cap: .seconds(5))

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The broker acknowledged the message published for `out.source`/`out.sourceOffset`.
    private func finished(_ out: Outbound) {
        condition.lock()
        tracker.finished(out.source, offset: out.sourceOffset)
        inBatch[out.source, default: 1] -= 1
        unacknowledged -= 1
        unacknowledgedBytes -= out.original.retainedBytes
        let offsets = tracker.takeCommittable()
        let resume = partitionsToResume()
        // The poll thread is woken once there is room for a batch, not for every acknowledgement.
        let freed = roomWanted && bounds.wakes(messages: count, bytes: bytes)
        if freed { roomWanted = false }
        condition.broadcast()
        condition.unlock()
        if freed { roomFreed.signal() }
        if !resume.isEmpty { consumer.resume(resume) }
        store(offsets)
    }

    private func store(_ offsets: [TopicPartition: Int64]) {
        guard !offsets.isEmpty else { return }
        do {
            try consumer.storeOffsets(offsets)
        } catch {
            // Offsets of partitions no longer assigned cannot be stored; the next owner redelivers.
            logger.debug("offsets not stored", [("error", .string(error.description))])
        }
    }

    // MARK: Rebalance (poll thread, inside librdkafka's callback)

    public func partitionsAssigned(_ partitions: [TopicPartition]) {
        condition.lock()
        assigned.formUnion(partitions)
        revoking.subtract(partitions)
        pauseNewlyAssigned = paused
        condition.unlock()
        logger.info("partitions assigned", [("partitions", .array(partitions.map { .string("\($0.topic)/\($0.partition)") }))])
    }

    /// Drops buffered messages of the revoked partitions (the next owner gets them), waits for the ones in
    /// the current batch to be stored and acknowledged, then stores the final offsets; the wrapper commits
    /// them before the partitions are given up.
    public func partitionsRevoked(_ partitions: [TopicPartition]) {
        let set = Set(partitions)
        let deadline = Date().addingTimeInterval(settings.revokeTimeoutSeconds)
        condition.lock()
        revoking.formUnion(set)
        for lane in buffers.indices {
            buffers[lane] = buffers[lane][bufferStarts[lane]...].filter { !set.contains($0.topicPartition) }
            bufferStarts[lane] = 0
        }
        bufferedBytes = buffers.reduce(0) { $0 + $1.reduce(0) { $0 + $1.retainedBytes } }
        while partitions.contains(where: { (inBatch[$0] ?? 0) > 0 }), Date() < deadline {
            _ = condition.wait(until: deadline)
        }
        let drained = !partitions.contains(where: { (inBatch[$0] ?? 0) > 0 })
        let offsets = tracker.takeCommittable()
        for partition in partitions {
            tracker.remove(partition)
            assigned.remove(partition)
        }
        condition.unlock()
        store(offsets)
        if !drained { logger.warning("revoked partitions before their jobs finished; they will be redelivered") }
        logger.info("partitions revoked", [("partitions", .array(partitions.map { .string("\($0.topic)/\($0.partition)") }))])
    }
}
