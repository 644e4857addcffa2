import AttestCore

/// How many requests one librdkafka client has sent to the brokers, by request name ("Fetch", "Produce",
/// "OffsetCommit", …), summed over its brokers, as its statistics document reports them (`brokers` → name →
/// `req`). The counts only grow over a client's life, so two readings subtract to what was sent between
/// them: what a client costs a broker, since a broker's work grows with its requests more than with the
/// messages they carry.
///
/// Parsed as input like the rest of the document: bounded in brokers and request names, a count that is
/// not a non-negative integer left out.
public struct BrokerRequests: Sendable, Equatable {
    /// Requests sent, by librdkafka's request name.
    public var counts: [String: Int64]

    /// Brokers read from one document (librdkafka lists its internal and bootstrap entries among them).
    static let maxBrokers = 4096
    /// Request names kept from one document: librdkafka knows about seventy.
    static let maxNames = 256
    static let maxNameBytes = 64

    public init(counts: [String: Int64] = [:]) {
        self.counts = counts
    }

    /// From a parsed statistics document; empty when it has no brokers.
    init(document: JSONValue) {
        var counts: [String: Int64] = [:]
        guard case .object(let brokers)? = document["brokers"] else {
            self.counts = counts
            return
        }
        for (_, broker) in brokers.prefix(Self.maxBrokers) {
            guard case .object(let requests)? = broker["req"] else { continue }
            for (name, value) in requests where name.utf8.count <= Self.maxNameBytes {
                guard case .int(let count) = value, count > 0,
                      counts[name] != nil || counts.count < Self.maxNames else { continue }
                counts[name] = Self.add(counts[name] ?? 0, count)
            }
        }
        self.counts = counts
    }

    /// From a whole statistics document (JSON text); nil when it is too large or not a JSON object.
    public init?(json: [UInt8]) {
        guard json.count <= ConsumerStatistics.maxBytes, let document = JSONValue.parse(json),
              case .object = document else { return nil }
        self.init(document: document)
    }

    /// All requests, whatever their name.
    public var total: Int64 { counts.values.reduce(0, Self.add) }

    /// What was sent since `earlier`: a count that went down (another client's figures) counts from zero.
    public func since(_ earlier: BrokerRequests) -> BrokerRequests {
        var sent: [String: Int64] = [:]
        for (name, count) in counts {
            let before = earlier.counts[name] ?? 0
            let difference = count >= before ? count - before : count
            if difference > 0 { sent[name] = difference }
        }
        return BrokerRequests(counts: sent)
    }

    /// Saturating: the counts are a library's word, and an overflow must not trap the worker.
    private static func add(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }
}
