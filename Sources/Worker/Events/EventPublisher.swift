import AttestCore
import Dispatch
import KafkaClient
import Lifecycle
import Observability
import PostgresClient
import Store
import Synchronization

/// Publishes the events outbox to the events topic: each round writes the grace periods that ended by the
/// clock's now, then claims unpublished rows (`FOR UPDATE SKIP LOCKED`, so two workers' publishers never
/// send one row at the same time), publishes them keyed by app or device, and marks those the broker
/// acknowledged as published in the claiming transaction; then purges rows published longer ago than the
/// retention. A row stays unpublished until acknowledged, so a crash anywhere re-sends it at worst
/// (consumers dedupe by eventId) and never loses it. Failures back off, capped, before the next round; the
/// age of the oldest unpublished event is exported each round, so a broker that refuses the topic (missing,
/// or an ACL) is seen by an alert before the outbox grows for long.
/// Every worker runs one, on a database connection and a producer of its own.
public final class EventPublisher: Service {
    public let name = "event publisher"

    public struct Settings: Sendable {
        public var topic: String
        /// Rows claimed (and published) per transaction.
        public var batchSize: Int
        public var interval: Duration
        /// How long published rows are kept before the purge.
        public var retentionSeconds: Int64
        public var maxBackoff: Duration

        public init(
            topic: String, batchSize: Int = 256, interval: Duration = .milliseconds(500), retentionSeconds: Int64 = 7 * 86_400,
            maxBackoff: Duration = .seconds(30)
        ) {
            self.topic = topic
            self.batchSize = batchSize
            self.interval = interval
            self.retentionSeconds = retentionSeconds
            self.maxBackoff = maxBackoff
        }
    }

    private let settings: Settings
    private let connection: PGReconnectingConnection
    private let producer: KafkaProducer
    private let clock: any Clock
    private let logger: Logger
    private let published: Counter
    private let failures: Counter
    private let oldestUnpublished: Gauge
    /// The backoff after failed rounds and when the next round may run.
    private let retry: Mutex<(backoff: Backoff, resumeAt: ContinuousClock.Instant?)>
    private let task: Mutex<PeriodicTask?> = Mutex(nil)

    public init(
        settings: Settings, conninfo: String, producerProperties: [String: String], clock: any Clock, registry: MetricsRegistry,
        logger: Logger
    ) throws(KafkaError) {
        self.settings = settings
        // Gives up on an outage after a while: the round fails and backs off, so stop is never held for long.
        connection = PGReconnectingConnection(conninfo: conninfo, applicationName: "attest-worker-events", retryTimeout: .seconds(10))
        // A delivery fails within 30 s at most, so a round (and the claim transaction it holds, and the stop
        // waiting for it) ends by then: an operator's message.timeout.ms may shorten that, never lengthen it
        // (0 would be forever).
        var properties = producerProperties
        let timeout = properties["message.timeout.ms"].flatMap(Int.init).map { (1...30_000).contains($0) ? $0 : 30_000 } ?? 30_000
        properties["message.timeout.ms"] = String(timeout)
        producer = try KafkaProducer(properties: properties)
        self.clock = clock
        self.logger = logger
        published = registry.counter(
            "attest_events_published_total", help: "Events the broker acknowledged on the events topic, by kind.",
            labelNames: ["kind"])
        failures = registry.counter(
            "attest_events_publish_failures_total", help: "Publisher rounds that failed (database or broker) and backed off.")
        oldestUnpublished = registry.gauge(
            "attest_events_oldest_unpublished_seconds",
            help: "How long the oldest event of the outbox has waited for the broker, after this worker's last round (0: none waits).")
        retry = Mutex((Backoff(initial: settings.interval, cap: max(settings.maxBackoff, settings.interval)), nil))
    }

    public func start(failed: @escaping @Sendable (any Error) -> Void) {
        let task = PeriodicTask(name: "events", every: settings.interval) { [self] in round() }
        self.task.withLock { $0 = task }
        task.start()
    }

    /// Cancels the connection's retries, so a round waiting out a database outage ends at once (its rows
    /// stay unpublished for the next worker), waits for the round in progress (bounded by the delivery
    /// timeout), then delivers or fails what the producer still holds.
    public func stop(deadline: ContinuousClock.Instant) {
        connection.cancel()
        task.withLock { $0 }?.stop()
        let left = deadline - .now
        producer.close(timeoutMs: Int32(clamping: max(left.components.seconds * 1000, 0)))
    }

    /// One round, skipped while backing off.
    func round() {
        if let resumeAt = retry.withLock({ $0.resumeAt }), ContinuousClock.now < resumeAt { return }
        do throws(PGError) {
            _ = try connection.run { c throws(PGError) in try c.execute(EventsTable.GraceEnded(now: clock.now(), limit: 1000)) }
            var complete = true
            while complete {
                let (claimed, sent) = try connection.run { c throws(PGError) in
                    try c.transaction { c throws(PGError) in try publishClaimed(c) }
                }
                complete = sent == claimed
                if claimed < settings.batchSize { break }
            }
            let before = clock.now().adding(seconds: -settings.retentionSeconds)
            _ = try connection.run { c throws(PGError) in try c.execute(EventsTable.Purge(before: before, limit: 10_000)) }
            // What a refusing broker leaves behind shows, whatever this round sent: the backlog's age.
            oldestUnpublished.set(try connection.run { c throws(PGError) in try c.execute(EventsTable.OldestUnpublished()) }.seconds)
            if complete {
                retry.withLock { $0.backoff.reset(); $0.resumeAt = nil }
            } else {
                backOff("events not acknowledged by the broker")
            }
        } catch {
            backOff(error.description)
        }
    }

    /// Claims a batch, publishes it and marks what the broker acknowledged; returns how many were
    /// claimed and how many are now marked.
    private func publishClaimed(_ c: PGConnection) throws(PGError) -> (claimed: Int, sent: Int) {
        let events = try c.execute(EventsTable.Claim(limit: settings.batchSize))
        guard !events.isEmpty else { return (0, 0) }
        let acknowledged = publish(events)
        if !acknowledged.isEmpty { _ = try c.execute(EventsTable.MarkPublished(acknowledged.map(\.eventId), now: clock.now())) }
        for event in acknowledged { published.labels([event.kind.rawValue]).increment() }
        return (events.count, acknowledged.count)
    }

    /// Sends every event and waits for the broker's answers (each arrives within message.timeout.ms);
    /// returns the events it acknowledged.
    private func publish(_ events: [OutboxEvent]) -> [OutboxEvent] {
        let group = DispatchGroup()
        let acked = Mutex([Bool](repeating: false, count: events.count))
        for (index, event) in events.enumerated() {
            var value = [UInt8]()
            event.json.write(to: &value)
            group.enter()
            do throws(KafkaError) {
                try producer.produce(topic: settings.topic, key: Array(event.partitionKey.utf8), value: value, headers: []) { result in
                    if case .success = result { acked.withLock { $0[index] = true } }
                    group.leave()
                }
            } catch {
                group.leave()
            }
        }
        group.wait()
        let flags = acked.withLock { $0 }
        return events.indices.filter { flags[$0] }.map { events[$0] }
    }

    private func backOff(_ reason: String) {
        let wait = retry.withLock { state in
            let wait = state.backoff.next()
            state.resumeAt = .now + wait
            return wait
        }
        failures.increment()
        logger.warning(
            "event publishing failed; retrying", [("error", .string(reason)), ("retryInMs", .int(Int64(wait.components.seconds * 1000)))])
    }
}
