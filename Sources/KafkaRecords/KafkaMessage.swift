/// One partition of one topic: the unit of assignment, pausing and offset storage.
public struct TopicPartition: Hashable, Sendable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}

/// A consumed record, copied out of librdkafka so it outlives the poll that returned it; as much of it as
/// ``Limits`` keep, with the sizes (and SHA-256 of whatever was cut) of the record as consumed.
public struct KafkaMessage: Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    /// nil when the record has no key; an empty array when the key is present but empty. A prefix when
    /// `keySha256` is set.
    public var key: [UInt8]?
    /// Empty both for an empty value and for a null value (a tombstone). A prefix when `valueSha256` is set.
    public var value: [UInt8]
    /// In record order; names may repeat. The first ones only when `headerCount` is larger.
    public var headers: [(name: String, value: [UInt8])]
    /// Milliseconds since the epoch, set by the producer or the broker (log append time) when known: any
    /// 64-bit value a producer chose.
    public var timestampMs: Int64?
    /// The key's size as consumed, and its SHA-256 when `key` holds only a prefix.
    public var keyBytes: Int
    public var keySha256: [UInt8]?
    /// The value's size as consumed, and its SHA-256 when `value` holds only a prefix.
    public var valueBytes: Int
    public var valueSha256: [UInt8]?
    /// How many headers the record had (`headers` may hold fewer).
    public var headerCount: Int
    /// When a poll returned it (milliseconds since the epoch, the consumer's clock), set by whoever polled:
    /// where its time in the broker ends and its time in a buffer begins. Nil until then.
    public var consumedMs: Int64? = nil

    public init(
        topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8],
        headers: [(name: String, value: [UInt8])], timestampMs: Int64?
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestampMs = timestampMs
        keyBytes = key?.count ?? 0
        valueBytes = value.count
        headerCount = headers.count
    }

    public var topicPartition: TopicPartition { TopicPartition(topic: topic, partition: partition) }

    /// What holding this message costs in memory, roughly: the bytes kept plus a fixed allowance for the
    /// struct, its arrays and strings. What the worker's buffer limit in bytes counts.
    public var retainedBytes: Int {
        var total = Self.fixedOverhead + topic.utf8.count + (key?.count ?? 0) + value.count
        for header in headers { total += Self.headerOverhead + header.name.utf8.count + header.value.count }
        return total
    }

    static let fixedOverhead = 256
    static let headerOverhead = 48
}

extension KafkaMessage {
    /// How much of a consumed record is copied out of librdkafka. Whatever is longer is kept as a prefix with
    /// its SHA-256 (computed over librdkafka's buffer, not a copy), enough for a dead letter: one hostile
    /// record then costs a bounded amount of memory whatever its size.
    public struct Limits: Sendable {
        /// Values up to this are copied whole (the worker's ATTEST_MAX_MESSAGE_BYTES: anything longer is
        /// not a job).
        public var maxValueBytes: Int
        /// What is kept of a longer value (it may be more than `maxValueBytes`: a dead letter shows that much).
        public var valuePrefixBytes: Int
        /// Keys up to this are copied whole; longer ones are cut to it.
        public var maxKeyBytes: Int
        /// Headers beyond these (a count, and their names and values in bytes) are dropped.
        public var maxHeaders: Int
        public var maxHeaderBytes: Int
        /// SHA-256, given by the application (this module links no crypto library).
        public var sha256: @Sendable (UnsafeRawBufferPointer) -> [UInt8]

        public init(
            maxValueBytes: Int, valuePrefixBytes: Int, maxKeyBytes: Int, maxHeaders: Int, maxHeaderBytes: Int,
            sha256: @escaping @Sendable (UnsafeRawBufferPointer) -> [UInt8]
        ) {
            self.maxValueBytes = max(0, maxValueBytes)
            self.valuePrefixBytes = max(0, valuePrefixBytes)
            self.maxKeyBytes = max(0, maxKeyBytes)
            self.maxHeaders = max(0, maxHeaders)
            self.maxHeaderBytes = max(0, maxHeaderBytes)
            self.sha256 = sha256
        }

        /// Everything copied whole (tests, tools).
        public static let unlimited = Limits(
            maxValueBytes: .max, valuePrefixBytes: .max, maxKeyBytes: .max, maxHeaders: .max, maxHeaderBytes: .max,
            sha256: { _ in [] })

        /// The most `retainedBytes` can be for a message copied under these limits (saturating).
        public var maxRetainedBytes: Int {
            let parts = [
                KafkaMessage.fixedOverhead, 249, max(maxValueBytes, valuePrefixBytes), maxKeyBytes, maxHeaderBytes,
                maxHeaders.multipliedReportingOverflow(by: KafkaMessage.headerOverhead).overflow
                    ? .max : maxHeaders * KafkaMessage.headerOverhead,
            ]
            return parts.reduce(0) { sum, part in
                let (total, overflow) = sum.addingReportingOverflow(part)
                return overflow ? .max : total
            }
        }

        /// The bytes at `buffer`, or their first `prefix` bytes and the whole buffer's SHA-256 when there
        /// are more than `limit`.
        public func keep(_ buffer: UnsafeRawBufferPointer, limit: Int, prefix: Int) -> (bytes: [UInt8], sha256: [UInt8]?) {
            guard buffer.count > limit else { return (Array(buffer), nil) }
            return (Array(buffer.prefix(prefix)), sha256(buffer))
        }

        /// The header bytes kept once one more header of `size` bytes (name and value) joins `kept` headers of
        /// `bytes` bytes, or nil when it would break either bound (then it and every later one are dropped).
        public func headerBytes(adding size: Int, to bytes: Int, kept: Int) -> Int? {
            let (total, overflow) = bytes.addingReportingOverflow(size)
            guard kept < maxHeaders, size >= 0, !overflow, total <= maxHeaderBytes else { return nil }
            return total
        }
    }
}
