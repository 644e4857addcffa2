import AttestCrypto

/// How large a message the worker may publish, from the producer's `message.max.bytes`: librdkafka refuses
/// anything bigger, and a refused publish must never be retried in a loop. Key, value and headers together
/// stay `recordOverhead` under the limit, the room the record's framing takes.
public struct OutboundBudget: Sendable, Equatable {
    /// librdkafka's default `message.max.bytes`.
    public static let defaultProducerLimit = 1_000_000
    /// The smallest `message.max.bytes` the worker runs with: room for a verdict with its token.
    public static let minimumProducerLimit = 65_536
    /// Record and batch framing (lengths, attributes, varints) and slack.
    public static let recordOverhead = 1024
    /// Outbound keys up to this are published as they are; longer ones are replaced by their SHA-256.
    public static let maxKeyBytes = 1024

    public let producerLimit: Int

    /// nil when `producerLimit` is below ``minimumProducerLimit``.
    public init?(producerLimit: Int) {
        guard producerLimit >= Self.minimumProducerLimit else { return nil }
        self.producerLimit = producerLimit
    }

    public static let standard = OutboundBudget(producerLimit: defaultProducerLimit)!

    /// What key, value and headers may add up to.
    public var bytes: Int { producerLimit - Self.recordOverhead }

    /// The bytes a message of these parts publishes (saturating, so any input can be measured).
    public static func size(key: [UInt8]?, value: [UInt8], headers: [(name: String, value: [UInt8])]) -> Int {
        var total = key?.count ?? 0
        for part in [value.count] + headers.flatMap({ [$0.name.utf8.count, $0.value.count] }) {
            let (sum, overflow) = total.addingReportingOverflow(part)
            total = overflow ? .max : sum
        }
        return total
    }

    public func fits(key: [UInt8]?, value: [UInt8], headers: [(name: String, value: [UInt8])]) -> Bool {
        Self.size(key: key, value: value, headers: headers) <= bytes
    }

    /// The Kafka key to publish for `key` (its bytes, or only a prefix when `sha256` is the whole key's
    /// digest): the key itself up to ``maxKeyBytes``, else its SHA-256, so that one producer's oversize
    /// keys still land together and never make the outbound message too large. nil stays nil.
    public static func key(_ key: [UInt8]?, sha256: [UInt8]? = nil) -> [UInt8]? {
        guard let key else { return nil }
        if let sha256 { return sha256 }
        return key.count <= maxKeyBytes ? key : Digest.sha256.hash(key)
    }
}
