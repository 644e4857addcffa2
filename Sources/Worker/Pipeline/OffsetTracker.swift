import KafkaClient

/// Which offsets of each partition are finished, so that only the contiguous finished prefix is ever
/// stored: an offset is stored only when every message before it has its verdict in PostgreSQL and its
/// publication acknowledged (or its dead letter acknowledged). Pure state, no I/O; callers lock it.
public struct OffsetTracker: Sendable {
    private struct Partition {
        /// Offsets received and not yet finished, in arrival order.
        var pending: [Int64] = []
        var pendingStart = 0
        var finished: Set<Int64> = []
        /// The next offset to consume after the finished prefix; nil until a first message finishes.
        var committable: Int64?
        /// The last value handed out by `takeCommittable`.
        var stored: Int64?
    }

    private var partitions: [TopicPartition: Partition] = [:]

    public init() {}

    /// Records a polled message. Offsets arrive in increasing order per partition.
    public mutating func received(_ partition: TopicPartition, offset: Int64) {
        partitions[partition, default: Partition()].pending.append(offset)
    }

    /// Marks a message finished and advances the partition's contiguous prefix.
    public mutating func finished(_ partition: TopicPartition, offset: Int64) {
        // Taken out of the dictionary so that mutating it does not copy its storage.
        guard var p = partitions.removeValue(forKey: partition) else { return }
        p.finished.insert(offset)
        while p.pendingStart < p.pending.count, p.finished.remove(p.pending[p.pendingStart]) != nil {
            // Saturating: an offset is the broker's word, and Int64.max must not trap the worker.
            let (next, overflow) = p.pending[p.pendingStart].addingReportingOverflow(1)
            p.committable = overflow ? .max : next
            p.pendingStart += 1
        }
        if p.pendingStart > 1024 && p.pendingStart * 2 > p.pending.count {
            p.pending.removeFirst(p.pendingStart)
            p.pendingStart = 0
        }
        partitions[partition] = p
    }

    /// Offsets to store now: per partition, the next offset after the finished prefix, when it moved since
    /// the last call.
    public mutating func takeCommittable() -> [TopicPartition: Int64] {
        var result = [TopicPartition: Int64]()
        for (key, p) in partitions {
            if let next = p.committable, next != p.stored {
                result[key] = next
                partitions[key]!.stored = next
            }
        }
        return result
    }

    /// Messages received and not finished, per partition.
    public func inFlight(_ partition: TopicPartition) -> Int {
        guard let p = partitions[partition] else { return 0 }
        return p.pending.count - p.pendingStart
    }

    public var totalInFlight: Int {
        partitions.values.reduce(0) { $0 + $1.pending.count - $1.pendingStart }
    }

    /// Forgets a partition (revoked): its unfinished messages will be redelivered to the next owner.
    public mutating func remove(_ partition: TopicPartition) {
        partitions[partition] = nil
    }
}
