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

/// A consumed record, copied out of librdkafka so it outlives the poll that returned it.
public struct KafkaMessage: Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    /// nil when the record has no key; an empty array when the key is present but empty.
    public var key: [UInt8]?
    /// Empty both for an empty value and for a null value (a tombstone).
    public var value: [UInt8]
    /// In record order; names may repeat.
    public var headers: [(name: String, value: [UInt8])]
    /// Milliseconds since the epoch, set by the producer or the broker (log append time) when known.
    public var timestampMs: Int64?

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
    }

    public var topicPartition: TopicPartition { TopicPartition(topic: topic, partition: partition) }
}
