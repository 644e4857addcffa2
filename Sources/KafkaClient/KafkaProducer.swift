internal import CRdKafka
import Glibc
import Lifecycle
import Synchronization

/// An idempotent producer whose delivery reports are served by a thread of its own.
///
/// Delivery reports, client errors and statistics (with `statistics.interval.ms`) are requested as
/// librdkafka events on the main queue and served by the "delivery thread" until `close`. Events rather
/// than callbacks because `rd_kafka_flush` then waits for that thread instead of serving reports itself:
/// with callbacks, a completion could run on whichever thread happened to call `flush`.
public final class KafkaProducer: Sendable {
    private let state: Mutex<Open?>
    /// The requests sent so far, from the latest statistics event; shared with the delivery thread.
    private let requests: RequestCounts

    private struct Open: Sendable {
        let client: RDKafkaHandle
        let queue: RDKafkaQueue
        let thread: JoinableThread
        let stopping: StopFlag
    }

    /// Forces `enable.idempotence=true` (no duplicates or reordering from librdkafka's own retries; it
    /// implies `acks=all`). `onError` receives client-level errors (brokers unreachable, fatal errors) on
    /// the delivery thread; librdkafka keeps retrying transient ones by itself.
    public init(properties: [String: String], onError: (@Sendable (KafkaError) -> Void)? = nil) throws(KafkaError) {
        let config = try RDKafkaConfig(properties)
        try config.set("enable.idempotence", "true")
        rd_kafka_conf_set_events(config.pointer, RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR | RD_KAFKA_EVENT_STATS)
        let client = try RDKafkaHandle(RD_KAFKA_PRODUCER, config: config, context: nil)
        let queue = RDKafkaQueue(mainOf: client)
        let stopping = StopFlag()
        let requests = RequestCounts()
        let thread = JoinableThread(name: "kafka-delivery") {
            Self.serveDeliveries(queue: queue, stopping: stopping, requests: requests, onError: onError)
        }
        self.requests = requests
        state = Mutex(Open(client: client, queue: queue, thread: thread, stopping: stopping))
    }

    /// Dropping an open producer closes it without waiting: what is still queued fails with
    /// ``KafkaError/Code/purgedQueue``. Call ``close(timeoutMs:)`` to deliver it first.
    deinit {
        close(timeoutMs: 0)
    }

    /// Queues one message for `topic`: on `partition` when given, else partitioned by key (no key:
    /// librdkafka's sticky partitioning).
    ///
    /// `completion` runs exactly once on the producer's delivery thread with the broker's acknowledgement
    /// (partition, offset) or the final error, after librdkafka's own retries (within
    /// `message.timeout.ms`). It must not block for long: it holds up every later report. When this
    /// throws, the message was not queued and `completion` never runs: ``KafkaError/Code/queueFull``
    /// (retriable: wait for deliveries, then try again), a fatal error, or ``KafkaError/Code/state`` after
    /// close. Key, value and headers are copied, and an empty key is sent as an empty key, not as none.
    /// `timestampMs` sets the record's create time (librdkafka's clock when nil). A partition the topic does
    /// not have fails with ``KafkaError/Code/unknownPartition``, here or in the report.
    public func produce(
        topic: String, partition: Int32? = nil, key: [UInt8]?, value: [UInt8], headers: [(name: String, value: [UInt8])],
        timestampMs: Int64? = nil,
        completion: @escaping @Sendable (Result<(partition: Int32, offset: Int64), KafkaError>) -> Void
    ) throws(KafkaError) {
        // Under the lock, so `close` cannot purge and destroy between the check and the enqueue, which
        // would lose the completion; rd_kafka_produceva never blocks (no RD_KAFKA_MSG_F_BLOCK).
        try state.withLock { open throws(KafkaError) in
            guard let client = open?.client else { throw .closed }
            try Self.enqueue(
                client: client, topic: topic, partition: partition, key: key, value: value, headers: headers,
                timestampMs: timestampMs,
                completion: DeliveryCompletion(completion))
        }
    }

    /// The requests this producer has sent to its brokers, as of its latest statistics event (up to one
    /// `statistics.interval.ms` old); nil before the first (librdkafka's default interval, 0, sends none).
    public func requestCounts() -> BrokerRequests? {
        requests.latest.withLock { $0 }
    }

    /// Waits for outstanding deliveries (their completions have run when this returns true); false when
    /// the timeout expired first. Messages waiting for `linger.ms` are sent at once. Not from a completion:
    /// it would wait for its own thread until the timeout.
    public func flush(timeoutMs: Int32) -> Bool {
        guard let client = state.withLock({ $0?.client }) else { return true }
        return rd_kafka_flush(client.pointer, timeoutMs) == RD_KAFKA_RESP_ERR_NO_ERROR
    }

    /// Flushes for up to `timeoutMs`, then fails whatever is left (``KafkaError/Code/purgedQueue``, or
    /// ``KafkaError/Code/purgedInFlight`` for messages sent but not acknowledged: those may still have
    /// been written), lets the delivery thread run those completions, stops it and destroys the handle.
    /// Idempotent; later `produce` calls throw.
    public func close(timeoutMs: Int32) {
        guard let open = state.withLock({ open -> Open? in
            defer { open = nil }
            return open
        }) else { return }
        // On the delivery thread (a completion dropped the last reference to the producer) a flush would
        // wait for this very thread: purge at once instead.
        let onDeliveryThread = open.thread.isCurrent
        if onDeliveryThread || rd_kafka_flush(open.client.pointer, timeoutMs) != RD_KAFKA_RESP_ERR_NO_ERROR {
            // Blocking purge: when it returns, every purged message has its report queued, and the
            // delivery thread serves the queue to the end before it stops, so each completion still runs once.
            _ = rd_kafka_purge(open.client.pointer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT)
        }
        open.stopping.set()
        rd_kafka_queue_yield(open.queue.pointer)
        if onDeliveryThread {
            // The thread's own references destroy the handle once its loop has ended.
            open.thread.detach()
        } else {
            open.thread.join()
        }
    }

    private static func enqueue(
        client: RDKafkaHandle, topic: String, partition: Int32?, key: [UInt8]?, value: [UInt8],
        headers: [(name: String, value: [UInt8])], timestampMs: Int64?, completion: DeliveryCompletion
    ) throws(KafkaError) {
        let headerList = headers.isEmpty ? nil : RDKafkaHeaders(headers)
        // Released by the delivery report, or below when the message is not queued.
        let opaque = Unmanaged.passRetained(completion).toOpaque()
        let failure = topic.withCString { topic in
            withBytes(key) { keyStart, keyCount in
                withBytes(value) { valueStart, valueCount in
                    var fields: [rd_kafka_vu_t] = []
                    fields.reserveCapacity(8)
                    var field = rd_kafka_vu_t()
                    field.vtype = RD_KAFKA_VTYPE_TOPIC
                    field.u.cstr = topic
                    fields.append(field)
                    field = rd_kafka_vu_t()
                    field.vtype = RD_KAFKA_VTYPE_VALUE
                    field.u.mem.ptr = UnsafeMutableRawPointer(mutating: valueStart)
                    field.u.mem.size = valueCount
                    fields.append(field)
                    if let keyStart {
                        field = rd_kafka_vu_t()
                        field.vtype = RD_KAFKA_VTYPE_KEY
                        field.u.mem.ptr = UnsafeMutableRawPointer(mutating: keyStart)
                        field.u.mem.size = keyCount
                        fields.append(field)
                    }
                    // librdkafka copies the value (keys are always copied), so the Swift arrays need not
                    // outlive this call.
                    field = rd_kafka_vu_t()
                    field.vtype = RD_KAFKA_VTYPE_MSGFLAGS
                    field.u.i = RD_KAFKA_MSG_F_COPY
                    fields.append(field)
                    field = rd_kafka_vu_t()
                    field.vtype = RD_KAFKA_VTYPE_OPAQUE
                    field.u.ptr = opaque
                    fields.append(field)
                    if let partition {
                        field = rd_kafka_vu_t()
                        field.vtype = RD_KAFKA_VTYPE_PARTITION
                        field.u.i32 = partition
                        fields.append(field)
                    }
                    if let timestampMs {
                        field = rd_kafka_vu_t()
                        field.vtype = RD_KAFKA_VTYPE_TIMESTAMP
                        field.u.i64 = timestampMs
                        fields.append(field)
                    }
                    if let headerList {
                        field = rd_kafka_vu_t()
                        field.vtype = RD_KAFKA_VTYPE_HEADERS
                        field.u.headers = headerList.pointer
                        fields.append(field)
                    }
                    return rd_kafka_produceva(client.pointer, fields, fields.count)
                }
            }
        }
        guard let failure else {
            // Queued: the message owns the headers now and frees them with itself.
            headerList?.relinquish()
            return
        }
        // Not queued: the headers are still ours (RDKafkaHeaders.deinit frees them), and no report will come.
        Unmanaged<DeliveryCompletion>.fromOpaque(opaque).release()
        throw KafkaError(consuming: failure)
    }

    /// The delivery thread: serves the main queue until `close` sets `stopping` (and wakes the wait), then
    /// serves what is left in it (the reports of purged messages) without waiting.
    private static func serveDeliveries(
        queue: RDKafkaQueue, stopping: StopFlag, requests: RequestCounts, onError: (@Sendable (KafkaError) -> Void)?
    ) {
        while true {
            let stopped = stopping.isSet
            guard let event = rd_kafka_queue_poll(queue.pointer, stopped ? 0 : 1_000) else {
                if stopped { return } else { continue }
            }
            defer { rd_kafka_event_destroy(event) }
            switch rd_kafka_event_type(event) {
            case RD_KAFKA_EVENT_DR:
                while let message = rd_kafka_event_message_next(event) {
                    deliver(message, client: queue.client)
                }
            case RD_KAFKA_EVENT_ERROR:
                let reason = String(cString: rd_kafka_event_error_string(event))
                onError?(queue.client.error(rd_kafka_event_error(event), reason: reason))
            case RD_KAFKA_EVENT_STATS:
                // The JSON belongs to the event; a document that does not parse keeps the last figures.
                guard let json = rd_kafka_event_stats(event) else { break }
                let length = strnlen(json, ConsumerStatistics.maxBytes + 1)
                if let counts = BrokerRequests(json: Array(UnsafeRawBufferPointer(start: json, count: length))) {
                    requests.latest.withLock { $0 = counts }
                }
            default:
                break
            }
        }
    }

    private static func deliver(_ message: UnsafePointer<rd_kafka_message_t>, client: RDKafkaHandle) {
        guard let opaque = message.pointee._private else { return }
        let completion = Unmanaged<DeliveryCompletion>.fromOpaque(opaque).takeRetainedValue()
        if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
            completion.body(.success((partition: message.pointee.partition, offset: message.pointee.offset)))
        } else {
            completion.body(.failure(client.error(message.pointee.err)))
        }
    }
}

/// The producer's latest request counts, written by the delivery thread.
private final class RequestCounts: Sendable {
    let latest = Mutex<BrokerRequests?>(nil)
}

/// A produce call's completion, passed to librdkafka as the message's opaque (retained until its report).
private final class DeliveryCompletion: Sendable {
    let body: @Sendable (Result<(partition: Int32, offset: Int64), KafkaError>) -> Void

    init(_ body: @escaping @Sendable (Result<(partition: Int32, offset: Int64), KafkaError>) -> Void) {
        self.body = body
    }
}

/// Tells the delivery thread to stop.
private final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() {
        value.store(true, ordering: .releasing)
    }
}

/// Calls `body` with the address and count of `bytes`; nil gives a null address (no key), while an empty
/// array gets a valid address so librdkafka sends an empty key or value rather than a null one.
private func withBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawPointer?, Int) -> R) -> R {
    guard let bytes else { return body(nil, 0) }
    guard !bytes.isEmpty else {
        var placeholder: UInt8 = 0
        return withUnsafeBytes(of: &placeholder) { body($0.baseAddress, 0) }
    }
    return bytes.withUnsafeBytes { body($0.baseAddress, $0.count) }
}
