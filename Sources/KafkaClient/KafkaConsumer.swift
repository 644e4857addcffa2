internal import CRdKafka
import Durations
import Synchronization

/// Hears about partition assignment changes so the application can prepare or drain its per-partition work.
///
/// Called on the consumer's poll thread from inside librdkafka's rebalance callback, before the wrapper
/// applies the change (assign/unassign, or incremental_assign/unassign for the cooperative protocol).
/// The final revoke of ``KafkaConsumer/close()`` runs on the thread that calls `close`. Empty changes are
/// not reported.
public protocol KafkaRebalanceDelegate: AnyObject, Sendable {
    /// Messages of these partitions may be returned by the next polls: reset their offset tracking.
    func partitionsAssigned(_ partitions: [TopicPartition])
    /// May block (bounded) to drain in-flight work and store final offsets; the wrapper commits stored
    /// offsets synchronously after it returns and before giving the partitions up. When the assignment
    /// was lost (the session timed out and the partitions already belong to another member) the commit
    /// is skipped: it would be refused, and the new owner reprocesses from the last committed offset.
    func partitionsRevoked(_ partitions: [TopicPartition])
}

/// A group consumer over one librdkafka consumer handle.
///
/// `poll` belongs to one dedicated thread (the "poll thread"), which also runs the rebalance delegate and
/// the error handler. `pause`, `resume`, `storeOffsets`, `commitSync`, `assignment`, `committed`, `lag`
/// and `storedLag` are safe from any thread, including from the delegate during a rebalance. `close` is
/// called from the poll thread or after it stopped polling; after `close` every call is a harmless no-op
/// or throws ``KafkaError/Code/state``.
public final class KafkaConsumer: Sendable {
    private let state: Mutex<State>
    private let limits: KafkaMessage.Limits

    private struct State {
        /// nil once closed.
        var open: Open?
        var closing = false
    }

    private struct Open: Sendable {
        let client: RDKafkaHandle
        let context: ConsumerContext
    }

    /// Creates the consumer and subscribes to `topics` (the group join happens during later polls).
    ///
    /// `properties` are librdkafka settings (bootstrap.servers, group.id, …); the wrapper forces
    /// `enable.auto.offset.store=false` (the application stores offsets) and keeps `enable.auto.commit`
    /// as given (default true: stored offsets are committed every `auto.commit.interval.ms`).
    /// `onError` receives consumer errors and client-level errors (brokers down, fatal errors) on the
    /// poll thread; librdkafka retries transient ones by itself, so they are for logs and health.
    /// `limits` bound what `poll` copies of each record.
    public init(
        properties: [String: String], topics: [String], delegate: (any KafkaRebalanceDelegate)?,
        limits: KafkaMessage.Limits = .unlimited, onError: (@Sendable (KafkaError) -> Void)? = nil
    ) throws(KafkaError) {
        self.limits = limits
        let config = try RDKafkaConfig(properties)
        try config.set("enable.auto.offset.store", "false")
        rd_kafka_conf_set_rebalance_cb(config.pointer) { client, err, partitions, opaque in
            guard let client, let opaque else { return }
            Unmanaged<ConsumerContext>.fromOpaque(opaque).takeUnretainedValue()
                .rebalance(client: client, err: err, partitions: partitions)
        }
        rd_kafka_conf_set_error_cb(config.pointer) { client, err, reason, opaque in
            guard let client, let opaque else { return }
            let error = KafkaError.resolving(
                rd_kafka_resp_err_t(rawValue: err), reason: reason.map { String(cString: $0) }, client: client)
            Unmanaged<ConsumerContext>.fromOpaque(opaque).takeUnretainedValue().report(error)
        }
        // Served by `poll` like the other callbacks; 0 hands the JSON back to librdkafka to free.
        rd_kafka_conf_set_stats_cb(config.pointer) { _, json, length, opaque in
            guard let json, let opaque else { return 0 }
            let statistics = length <= ConsumerStatistics.maxBytes
                ? ConsumerStatistics(json: Array(UnsafeRawBufferPointer(start: json, count: length))) : nil
            Unmanaged<ConsumerContext>.fromOpaque(opaque).takeUnretainedValue().statistics.withLock { $0 = statistics }
            return 0
        }
        let context = ConsumerContext(delegate: delegate, onError: onError)
        let client = try RDKafkaHandle(RD_KAFKA_CONSUMER, config: config, context: context)
        // Client-level errors arrive on the main queue: forwarded to the consumer queue, `poll` serves them.
        rd_kafka_poll_set_consumer(client.pointer)
        let subscription = RDKafkaTopicPartitionList(subscribing: topics)
        let err = rd_kafka_subscribe(client.pointer, subscription.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw client.error(err) }
        state = Mutex(State(open: Open(client: client, context: context)))
    }

    deinit {
        close()
    }

    /// Poll thread only. Up to `max` messages, waiting at most `timeoutMs` for the first and not at all for
    /// the rest; serves rebalance callbacks and errors meanwhile. Error events are never returned as
    /// messages: they go to the error handler (end-of-partition events are dropped).
    public func poll(max: Int, timeoutMs: Int32) -> [KafkaMessage] {
        guard max > 0, let open = state.withLock({ $0.closing ? nil : $0.open }) else { return [] }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(timeoutMs))
        var messages: [KafkaMessage] = []
        while messages.count < max {
            let wait = messages.isEmpty ? Self.milliseconds(until: deadline, clock: clock) : 0
            guard let message = rd_kafka_consumer_poll(open.client.pointer, wait) else { break }
            defer { rd_kafka_message_destroy(message) }
            switch message.pointee.err {
            case RD_KAFKA_RESP_ERR_NO_ERROR:
                messages.append(KafkaMessage(copying: message, limits: limits))
            case RD_KAFKA_RESP_ERR__PARTITION_EOF:
                continue
            default:
                let reason = String(cString: rd_kafka_message_errstr(message))
                open.context.report(open.client.error(message.pointee.err, reason: reason))
            }
        }
        return messages
    }

    /// Stops fetching these partitions while `poll` continues to serve the group (so the member is not
    /// evicted). Messages already fetched but not yet returned are dropped, and fetching restarts at the
    /// position after the last message returned. Failures (a partition not assigned) go to the error handler.
    public func pause(_ partitions: [TopicPartition]) {
        pauseOrResume(partitions, rd_kafka_pause_partitions)
    }

    /// Restarts fetching paused partitions from the position after the last message returned.
    public func resume(_ partitions: [TopicPartition]) {
        pauseOrResume(partitions, rd_kafka_resume_partitions)
    }

    private func pauseOrResume(
        _ partitions: [TopicPartition],
        _ apply: (OpaquePointer?, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) -> rd_kafka_resp_err_t
    ) {
        guard !partitions.isEmpty, let open = state.withLock({ $0.open }) else { return }
        let list = RDKafkaTopicPartitionList(partitions)
        _ = apply(open.client.pointer, list.pointer)  // always NO_ERROR: the outcome is per partition
        if let error = list.firstError { open.context.report(error) }
    }

    /// Stores `offset` (the NEXT offset to consume, i.e. last processed + 1) for each partition, for the
    /// next commit (automatic, ``commitSync()``, or the one after a revoke). The partitions that can be
    /// stored are stored even when another one fails; the first failure is thrown: ``KafkaError/Code/state``
    /// for a partition no longer assigned (a worker racing a rebalance may ignore it),
    /// ``KafkaError/Code/unknownPartition`` for one this consumer never had.
    public func storeOffsets(_ offsets: [TopicPartition: Int64]) throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        guard let open = state.withLock({ $0.open }) else { throw .closed }
        let list = RDKafkaTopicPartitionList(offsets: offsets)
        let err = rd_kafka_offsets_store(open.client.pointer, list.pointer)
        if let error = list.firstError { throw error }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw open.client.error(err) }
    }

    /// Commits the stored offsets now and waits for the broker's answer; nothing to commit is no error.
    public func commitSync() throws(KafkaError) {
        guard let open = state.withLock({ $0.open }) else { throw .closed }
        let err = rd_kafka_commit(open.client.pointer, nil, 0)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__NO_OFFSET else {
            throw open.client.error(err)
        }
    }

    /// The partitions currently assigned to this member (empty before the first join and after close).
    public func assignment() -> [TopicPartition] {
        guard let open = state.withLock({ $0.open }) else { return [] }
        return Self.assignment(of: open.client)?.partitions ?? []
    }

    /// Committed offsets as the broker reports them (for tests and lag): nil when none. Blocks up to
    /// `timeoutMs` for the coordinator's answer.
    public func committed(
        _ partitions: [TopicPartition], timeoutMs: Int32
    ) throws(KafkaError) -> [TopicPartition: Int64?] {
        guard let open = state.withLock({ $0.open }) else { throw .closed }
        let list = RDKafkaTopicPartitionList(partitions)
        let err = rd_kafka_committed(open.client.pointer, list.pointer, timeoutMs)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw open.client.error(err) }
        if let error = list.firstError { throw error }
        var offsets: [TopicPartition: Int64?] = [:]
        for item in list.elements {
            let offset: Int64? = item.offset == Int64(RD_KAFKA_OFFSET_INVALID) ? nil : item.offset
            offsets.updateValue(offset, forKey: TopicPartition(topic: String(cString: item.topic), partition: item.partition))
        }
        return offsets
    }

    /// Messages each assigned partition has left to finish: from the offset stored for the next commit
    /// (else the committed one, else the log's start) to the end of the log, as librdkafka's latest
    /// statistics give them (``ConsumerStatistics/Partition/lag``), so jobs fetched but not
    /// yet stored count. Never blocks; figures are up to one `statistics.interval.ms` old. An assigned
    /// partition librdkafka has no end of log for yet is absent. nil when nothing is known: no statistics
    /// (librdkafka's default interval is 0, none), the last document did not parse, or no assignment to read.
    public func storedLag() -> [TopicPartition: Int64]? {
        guard let open = state.withLock({ $0.open }), let statistics = open.context.statistics.withLock({ $0 }),
              let assigned = Self.assignment(of: open.client)?.partitions else { return nil }
        var lag: [TopicPartition: Int64] = [:]
        for partition in assigned {
            if let behind = statistics.partitions[partition]?.lag { lag[partition] = behind }
        }
        return lag
    }

    /// The requests this consumer has sent to its brokers, as of its latest statistics (up to one
    /// `statistics.interval.ms` old); nil before the first document or when the last did not parse.
    public func requestCounts() -> BrokerRequests? {
        state.withLock({ $0.open })?.context.statistics.withLock { $0?.requests }
    }

    /// Leaves the group cleanly: `rd_kafka_consumer_close` (which runs the final revoke through the
    /// delegate, then commits stored offsets), then destroys the handle and releases the delegate.
    /// Blocks until the group is left; idempotent (a second call returns at once). Other threads may keep
    /// calling the thread-safe methods meanwhile (the delegate may store offsets): the handle is destroyed
    /// after the last such call returns.
    public func close() {
        let open = state.withLock { state -> Open? in
            guard !state.closing else { return nil }
            state.closing = true
            return state.open
        }
        guard let open else { return }
        let err = rd_kafka_consumer_close(open.client.pointer)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { open.context.report(open.client.error(err)) }
        state.withLock { $0.open = nil }
    }

    private static func assignment(of client: RDKafkaHandle) -> RDKafkaTopicPartitionList? {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        guard rd_kafka_assignment(client.pointer, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return nil }
        return RDKafkaTopicPartitionList(adopting: list)
    }

    private static func milliseconds(until deadline: ContinuousClock.Instant, clock: ContinuousClock) -> Int32 {
        Int32(clamping: max(0, clock.now.duration(to: deadline).wholeMilliseconds))
    }
}

/// What the consumer's C callbacks reach through the configuration opaque. Owned by the handle, so it
/// lives exactly as long as librdkafka may call back, and the delegate is released with the handle.
final class ConsumerContext: Sendable {
    let delegate: (any KafkaRebalanceDelegate)?
    let onError: (@Sendable (KafkaError) -> Void)?
    /// The latest statistics document, nil before the first or when it did not parse.
    let statistics = Mutex<ConsumerStatistics?>(nil)

    init(delegate: (any KafkaRebalanceDelegate)?, onError: (@Sendable (KafkaError) -> Void)?) {
        self.delegate = delegate
        self.onError = onError
    }

    func report(_ error: KafkaError) {
        onError?(error)
    }

    /// librdkafka's rebalance callback. With a callback installed librdkafka applies nothing by itself:
    /// this tells the delegate first, commits on revoke, then applies the change with the call that
    /// matches the group's protocol (mixing them is an error).
    func rebalance(
        client: OpaquePointer, err: rd_kafka_resp_err_t,
        partitions list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
    ) {
        let partitions = list.map(RDKafkaTopicPartitionList.partitions(of:)) ?? []
        // NULL on error (librdkafka: a consumer closing or not in a group): then not the cooperative protocol.
        let cooperative = rd_kafka_rebalance_protocol(client).map { String(cString: $0) } == "COOPERATIVE"
        switch err {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            if !partitions.isEmpty { delegate?.partitionsAssigned(partitions) }
            if cooperative {
                if let error = rd_kafka_incremental_assign(client, list) { report(KafkaError(consuming: error)) }
            } else {
                reportFailure(rd_kafka_assign(client, list), client: client)
            }
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            if !partitions.isEmpty { delegate?.partitionsRevoked(partitions) }
            if rd_kafka_assignment_lost(client) == 0 {
                let committed = rd_kafka_commit(client, nil, 0)
                if committed != RD_KAFKA_RESP_ERR__NO_OFFSET { reportFailure(committed, client: client) }
            }
            if cooperative {
                if let error = rd_kafka_incremental_unassign(client, list) { report(KafkaError(consuming: error)) }
            } else {
                reportFailure(rd_kafka_assign(client, nil), client: client)
            }
        default:
            // A failed rebalance: drop the assignment so librdkafka's state stays consistent; it rejoins.
            report(KafkaError.resolving(err, reason: nil, client: client))
            reportFailure(rd_kafka_assign(client, nil), client: client)
        }
    }

    private func reportFailure(_ err: rd_kafka_resp_err_t, client: OpaquePointer) {
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { report(KafkaError.resolving(err, reason: nil, client: client)) }
    }
}

extension KafkaMessage {
    /// Copies key, value and headers out of a message that librdkafka frees after the poll, as much of
    /// each as `limits` keep (the rest is measured and hashed in place, never copied).
    init(copying message: UnsafeMutablePointer<rd_kafka_message_t>, limits: Limits) {
        let raw = message.pointee
        var type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let timestamp = rd_kafka_message_timestamp(message, &type)
        var headers: [(name: String, value: [UInt8])] = []
        var headerCount = 0
        var list: OpaquePointer?
        // The list belongs to the message: read, never destroyed here.
        if rd_kafka_message_headers(message, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list {
            var name: UnsafePointer<CChar>?
            var value: UnsafeRawPointer?
            var size = 0
            var bytes = 0
            var keeping = true
            while rd_kafka_header_get_all(list, headerCount, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                headerCount += 1
                guard keeping, let name else { continue }
                // Kept while both bounds hold; from the first header that would not fit on, only counted.
                guard let total = limits.headerBytes(adding: Self.length(of: name) &+ size, to: bytes, kept: headers.count) else {
                    keeping = false
                    continue
                }
                bytes = total
                headers.append((String(cString: name), Self.bytes(value, size, limit: .max, prefix: 0, limits).bytes))
            }
        }
        let key = raw.key.map { Self.bytes($0, raw.key_len, limit: limits.maxKeyBytes, prefix: limits.maxKeyBytes, limits) }
        let value = Self.bytes(raw.payload, raw.len, limit: limits.maxValueBytes, prefix: limits.valuePrefixBytes, limits)
        self.init(
            topic: String(cString: rd_kafka_topic_name(raw.rkt)),
            partition: raw.partition,
            offset: raw.offset,
            key: key?.bytes,
            value: value.bytes,
            headers: headers,
            timestampMs: type == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : timestamp
        )
        keyBytes = raw.key == nil ? 0 : raw.key_len
        keySha256 = key?.sha256
        valueBytes = raw.len
        valueSha256 = value.sha256
        self.headerCount = headerCount
    }

    private static func length(of name: UnsafePointer<CChar>) -> Int {
        var count = 0
        while name[count] != 0 { count += 1 }
        return count
    }

    private static func bytes(
        _ start: UnsafeRawPointer?, _ count: Int, limit: Int, prefix: Int, _ limits: Limits
    ) -> (bytes: [UInt8], sha256: [UInt8]?) {
        guard let start, count > 0 else { return ([], nil) }
        return limits.keep(UnsafeRawBufferPointer(start: start, count: count), limit: limit, prefix: prefix)
    }
}
