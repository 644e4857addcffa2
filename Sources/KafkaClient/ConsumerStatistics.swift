import AttestCore

/// The offsets of a consumer's partitions as librdkafka's statistics report them (a JSON document every
/// `statistics.interval.ms`, served by `poll`): enough for the lag a group has left to finish without a
/// broker round trip on the scrape path, and the requests the consumer has sent (``BrokerRequests``).
///
/// The document is librdkafka's own, but it is still parsed as input: bounded in size and partitions,
/// every offset checked (a partition without a valid id or end of log is left out, a stored offset past
/// the end counts 0 behind), and a document that does not parse ignored whole.
public struct ConsumerStatistics: Sendable, Equatable {
    public struct Partition: Sendable, Equatable {
        /// The end of the log as the last fetch response gave it (`hi_offset`).
        public var high: Int64
        /// The start of the log (`lo_offset`); nil before librdkafka learned it.
        public var low: Int64?
        /// The offset stored for the next commit (`stored_offset`); nil when none was stored since assignment.
        public var stored: Int64?
        /// The group's committed offset as this member last read or wrote it (`committed_offset`).
        public var committed: Int64?

        public init(high: Int64, low: Int64? = nil, stored: Int64? = nil, committed: Int64? = nil) {
            (self.high, self.low, self.stored, self.committed) = (high, low, stored, committed)
        }

        /// Messages the group has not finished: from the offset its next commit would store (stored, else
        /// committed) to the end of the log. With neither the group starts at the log's start
        /// (`auto.offset.reset=earliest`, as the worker configures it), so everything retained is behind;
        /// a committed offset the retention already deleted counts from the start too. nil when unknown.
        public var lag: Int64? {
            guard let start = stored ?? committed ?? low else { return nil }
            return Swift.max(0, high - Swift.max(start, low ?? 0))
        }
    }

    /// By topic and partition; only partitions with a known end of log.
    public var partitions: [TopicPartition: Partition]
    /// The requests the consumer has sent to its brokers so far.
    public var requests: BrokerRequests

    /// A consumer's document is a few kilobytes per partition: anything past this is not one.
    static let maxBytes = 16 << 20
    /// Partitions read from one document, over all topics; the rest are left out.
    static let maxPartitions = 16_384

    public init(partitions: [TopicPartition: Partition], requests: BrokerRequests = BrokerRequests()) {
        self.partitions = partitions
        self.requests = requests
    }

    /// Parses librdkafka's statistics JSON (`topics` → name → `partitions` → id → offsets); nil when it is
    /// too large or not such a document. Offsets librdkafka does not know yet are negative (-1001) and read
    /// as absent; librdkafka's internal partition -1 is skipped.
    public init?(json: [UInt8]) {
        guard json.count <= Self.maxBytes, let document = JSONValue.parse(json),
              case .object(let topics)? = document["topics"] else { return nil }
        var partitions: [TopicPartition: Partition] = [:]
        for (name, topic) in topics {
            guard case .object(let members)? = topic["partitions"] else { continue }
            for (_, figures) in members where partitions.count < Self.maxPartitions {
                guard case .int(let id)? = figures["partition"], let partition = Int32(exactly: id), partition >= 0,
                      let high = Self.offset(figures["hi_offset"]) else { continue }
                partitions[TopicPartition(topic: name, partition: partition)] = Partition(
                    high: high, low: Self.offset(figures["lo_offset"]), stored: Self.offset(figures["stored_offset"]),
                    committed: Self.offset(figures["committed_offset"]))
            }
        }
        self.partitions = partitions
        requests = BrokerRequests(document: document)
    }

    private static func offset(_ value: JSONValue?) -> Int64? {
        guard case .int(let offset)? = value, offset >= 0 else { return nil }
        return offset
    }
}
