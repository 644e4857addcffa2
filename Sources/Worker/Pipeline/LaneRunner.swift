import AttestCore
import Durations
import AttestJobs
import KafkaClient
import Lifecycle
import Observability
import PostgresClient
import Store

/// The batch threads: one per lane, each with its own ``BatchProcessor`` (and database connection), taking
/// its share of the partitions from the ``Intake``, deciding and storing a batch, then handing its
/// outbound messages to the ``OutboundPublisher``. While one lane waits for PostgreSQL another decides; a
/// key's jobs stay in one partition, hence in one lane and in order.
final class LaneRunner: @unchecked Sendable {
    private let processors: [BatchProcessor]
    private let intake: Intake
    private let publisher: OutboundPublisher
    private let stages: StageClock
    private let logger: Logger
    private let metrics: WorkerMetrics
    /// Set by ``start()`` and joined by ``drain()``, both on the group's thread.
    private var threads: [JoinableThread] = []

    init(
        processors: [BatchProcessor], intake: Intake, publisher: OutboundPublisher, stages: StageClock, logger: Logger,
        metrics: WorkerMetrics
    ) {
        self.processors = processors
        self.intake = intake
        self.publisher = publisher
        self.stages = stages
        self.logger = logger
        self.metrics = metrics
    }

    func start() {
        threads = processors.indices.map { lane in JoinableThread(name: "batch-\(lane)") { [self] in batchLoop(lane: lane) } }
    }

    /// A lane retrying an outage gives its batch up (redelivered later) instead of holding the shutdown.
    func cancelRetries() {
        for processor in processors { processor.store.cancelRetries() }
    }

    /// Waits until the lanes have finished the buffered jobs and every publication is acknowledged, then
    /// joins them. A lane held by PostgreSQL holds this past the group's deadline, where the group gives up
    /// naming the lanes, so no offset is stored after the deadline.
    func drain() {
        intake.waitUntilDrained()
        for thread in threads { thread.join() }
    }

    private func batchLoop(lane: Int) {
        // Lane 0's connection checked the schema at start: that time is no batch's.
        _ = processors[lane].store.takeDatabaseTime()
        while let batch = intake.nextBatch(lane: lane) {
            metrics.batchSize.observe(Double(batch.count))
            let started = ContinuousClock.now
            let startedMs = stages.nowMilliseconds()
            for message in batch { stages.observe(.buffer, since: message.consumedMs, now: startedMs) }
            var timings = BatchTimings()
            guard let outbound = processWithRetries(batch[...], processors[lane], &timings) else {
                // Given up at shutdown: no longer in flight, its offsets unfinished (the next owner redelivers).
                intake.apply { $0.abandoned(batch) }
                continue
            }
            let took = ContinuousClock.now - started
            metrics.batchSeconds.observe(took)
            metrics.batchDatabaseSeconds.observe(processors[lane].store.takeDatabaseTime())
            // Each job waits for its whole batch: every stage is observed once per job.
            let deciding = max(.zero, took - timings.reading - timings.storing)
            for (stage, duration) in [(JobStage.reading, timings.reading), (.deciding, deciding), (.storing, timings.storing)] {
                metrics.stage(stage).observe(duration.timeInterval, count: batch.count)
            }
            let charged = outbound.map { out in
                var out = out
                out.charge = Outbound.chargeFor(out)
                return out
            }
            intake.apply { $0.charged(charged.reduce(0) { $0 + $1.charge }) }
            for out in charged { publisher.publish(out) }
        }
        intake.apply { $0.laneStopped() }
    }

    /// Transient database failures (an outage, a read-only standby, a deadlock, a timeout) are retried
    /// inside the store on fresh connections for as long as they last, so what reaches here is a value
    /// PostgreSQL refuses, a shutdown, or a batch fault that retrying may cure (an outage that outlasted the
    /// store's retries), retried here with backoff. A refused value is isolated by halving the batch until the job
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
}
