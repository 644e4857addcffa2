import KafkaClient

/// A message the worker publishes for one consumed message: its verdict or its dead letter. The consumed
/// message's offset is finished when the broker acknowledges this one.
public struct Outbound: Sendable {
    public var source: TopicPartition
    public var sourceOffset: Int64
    public var topic: String
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [(name: String, value: [UInt8])]
}
