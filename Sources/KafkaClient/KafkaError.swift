internal import CRdKafka

/// A librdkafka failure reduced to what callers branch on and what is safe to log.
///
/// `code` is the raw `rd_kafka_resp_err_t` (negative: raised inside librdkafka; positive: returned by a
/// broker), so the application can match codes through ``Code`` without importing librdkafka. `message`
/// is librdkafka's own text or ours: it never carries message keys, values or headers.
public struct KafkaError: Error, Sendable, CustomStringConvertible {
    /// The `rd_kafka_resp_err_t` raw value.
    public var code: Int32
    /// `rd_kafka_err2name`, e.g. `_QUEUE_FULL`: stable, unlike the message.
    public var name: String
    public var message: String
    /// The client instance is unusable (for example an idempotence guarantee was broken): recreate it.
    public var isFatal: Bool
    /// The same operation may succeed if tried again later (full queue, broker unreachable, timeout).
    public var isRetriable: Bool

    /// Producing this very message can never succeed (too large, a record the broker calls invalid): a
    /// publisher must stop retrying it and publish something else in its place. Checked before
    /// `isRetriable`, which says nothing about the message.
    public var rejectsMessage: Bool { Self.messageRejections.contains(code) }
    /// The destination itself is refused: no such topic or partition, or no right to write to it. Retrying
    /// the same message there cannot help (a reply to a topic a job named, say).
    public var refusesDestination: Bool { Self.destinationRejections.contains(code) }

    public var description: String {
        let flags = (isFatal ? ", fatal" : "") + (isRetriable ? ", retriable" : "")
        return "KafkaError(\(name) [\(code)]\(flags)): \(message)"
    }
}

extension KafkaError {
    /// Raw codes an application branches on, spelled here so it need not import librdkafka.
    public enum Code {
        /// The producer's local queue is full (`queue.buffering.max.messages/kbytes`): back off and retry.
        public static let queueFull = RD_KAFKA_RESP_ERR__QUEUE_FULL.rawValue
        /// The message was not acknowledged within `message.timeout.ms`.
        public static let messageTimedOut = RD_KAFKA_RESP_ERR__MSG_TIMED_OUT.rawValue
        /// A blocking call ran out of time.
        public static let timedOut = RD_KAFKA_RESP_ERR__TIMED_OUT.rawValue
        /// The client is closed, or the partition is no longer assigned to this consumer.
        public static let state = RD_KAFKA_RESP_ERR__STATE.rawValue
        /// The consumer never had this partition (so it cannot store an offset for it).
        public static let unknownPartition = RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION.rawValue
        /// A bad argument or configuration value.
        public static let invalidArgument = RD_KAFKA_RESP_ERR__INVALID_ARG.rawValue
        /// The message (key, value and headers) is over the producer's `message.max.bytes` or the broker's limit.
        public static let messageTooLarge = RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE.rawValue
        /// The broker refused a record of the batch as invalid.
        public static let invalidRecord = RD_KAFKA_RESP_ERR_INVALID_RECORD.rawValue
        /// The producer was closed before the message could be sent: it was not delivered.
        public static let purgedQueue = RD_KAFKA_RESP_ERR__PURGE_QUEUE.rawValue
        /// The producer was closed while the message was in flight: it may or may not have been delivered.
        public static let purgedInFlight = RD_KAFKA_RESP_ERR__PURGE_INFLIGHT.rawValue
    }
}

extension KafkaError {
    /// An error from a plain `rd_kafka_resp_err_t`, with librdkafka's text unless a better one is given.
    init(_ err: rd_kafka_resp_err_t, message: String? = nil, isFatal: Bool = false) {
        self.code = err.rawValue
        self.name = String(cString: rd_kafka_err2name(err))
        self.message = message ?? String(cString: rd_kafka_err2str(err))
        self.isFatal = isFatal
        self.isRetriable = !isFatal && Self.retriable.contains(err.rawValue)
    }

    /// Converts an `rd_kafka_error_t`, which carries its own fatal/retriable flags, and destroys it:
    /// every call site that receives one hands it here, so none can leak or be freed twice.
    init(consuming error: OpaquePointer) {
        self.code = rd_kafka_error_code(error).rawValue
        self.name = String(cString: rd_kafka_error_name(error))
        self.message = String(cString: rd_kafka_error_string(error))
        self.isFatal = rd_kafka_error_is_fatal(error) != 0
        self.isRetriable = rd_kafka_error_is_retriable(error) != 0
        rd_kafka_error_destroy(error)
    }

    /// An error reported by a client as `_FATAL` names no cause: the cause is kept by the client and read
    /// with `rd_kafka_fatal_error`. Any other code is taken as is.
    static func resolving(_ err: rd_kafka_resp_err_t, reason: String?, client: OpaquePointer) -> KafkaError {
        guard err == RD_KAFKA_RESP_ERR__FATAL else { return KafkaError(err, message: reason) }
        var buffer = [CChar](repeating: 0, count: 512)
        let cause = rd_kafka_fatal_error(client, &buffer, buffer.count)
        guard cause != RD_KAFKA_RESP_ERR_NO_ERROR else { return KafkaError(err, message: reason, isFatal: true) }
        return KafkaError(cause, message: String(cBuffer: buffer), isFatal: true)
    }

    /// Errors (of those librdkafka reports as plain codes) that are transient: the same request may
    /// succeed once a broker is reachable again, a leader is elected or the queue has drained.
    private static let retriable: Set<Int32> = [
        RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__RESOLVE, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN,
        RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
        RD_KAFKA_RESP_ERR__QUEUE_FULL, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
        RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
        RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION,
        RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_NOT_COORDINATOR, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND, RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS,
    ].reduce(into: []) { $0.insert($1.rawValue) }

    /// Broker answers and local checks that refuse the message itself, whatever the broker's state.
    private static let messageRejections: Set<Int32> = [
        RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE, RD_KAFKA_RESP_ERR_INVALID_MSG,
        RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE, RD_KAFKA_RESP_ERR_INVALID_RECORD, RD_KAFKA_RESP_ERR__BAD_MSG,
    ].reduce(into: []) { $0.insert($1.rawValue) }

    private static let destinationRejections: Set<Int32> = [
        RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION, RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
        RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION,
    ].reduce(into: []) { $0.insert($1.rawValue) }

    /// The error librdkafka would report for the raw `rd_kafka_resp_err_t` `code` (a delivery report's, say).
    public init(code: Int32) {
        self.init(rd_kafka_resp_err_t(rawValue: code))
    }

    /// The error for any call on a client after `close()`.
    static let closed = KafkaError(RD_KAFKA_RESP_ERR__STATE, message: "the client is closed")
}
