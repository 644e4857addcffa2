import AttestJobs
import KafkaClient

/// A message the worker publishes for one consumed message: its verdict (and its copy on the job's reply
/// topic) or its dead letter. The consumed message's offset is finished when the broker acknowledges the
/// last of the chain (`then`).
public struct Outbound: Sendable {
    public var source: TopicPartition
    public var sourceOffset: Int64
    public var topic: String
    /// Set only for a reply the job asked to receive on a given partition; else partitioned by key.
    public var partition: Int32? = nil
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [(name: String, value: [UInt8])]
    /// Published in order once this one is acknowledged; the last of them finishes the source offset. An
    /// unstorable job's dead letter goes first, then its verdict, so the verdict never comes without it; a
    /// verdict's reply comes last.
    public var then: [Outbound] = []
    /// The consumed message, kept until the broker acknowledges this one: what a replacement dead letter is
    /// built from, and what the intake buffer's byte bound counts.
    public var original: KafkaMessage
    public var kind: Kind
    /// What the chain holds beyond `original` until the offset finishes, counted in the intake's byte
    /// bound (``chargeFor(_:)``), carried along the chain and released with the offset.
    public var charge = 0

    /// The bytes an outbound chain holds: each value twice, once here and once in librdkafka's copy while
    /// in flight. A dead letter inlines its original (up to the producer's budget), so a flood of large
    /// records held up by a slow broker would otherwise hold several times what the intake counts.
    public static func chargeFor(_ out: Outbound) -> Int {
        2 * (out.value.count + out.then.reduce(0) { $0 + $1.value.count })
    }

    public enum Kind: Sendable {
        case verdict
        /// The verdict again, on the reply topic the job named: one the broker refuses (no such topic or
        /// partition, too large) is skipped, logged and counted, never retried, so it cannot hold the offset.
        case reply
        case deadLetter(DeadLetter.Reason)
        /// The replacement of a message the broker refused for good: nothing smaller can stand in for it.
        case smallestDeadLetter

        var name: String {
            switch self {
            case .verdict: "verdict"
            case .reply: "reply"
            case .deadLetter, .smallestDeadLetter: "dead letter"
            }
        }
    }
}
