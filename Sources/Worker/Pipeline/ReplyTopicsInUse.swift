import Synchronization

/// The reply topics this worker has sent to, bounded. librdkafka keeps a topic handle (and asks the broker for
/// its metadata) for every topic its producer has used, until the producer goes: a producer of jobs naming a
/// new allowed topic each time (`reply-to: replies.<random>` under a prefix) would grow the worker, its
/// statistics and its metadata requests without end. Past `limit` distinct topics a new one gets no reply
/// (reason `too_many_topics`); those already used keep theirs. Shared by the worker's lanes.
public final class ReplyTopicsInUse: Sendable {
    public static let defaultLimit = 1024
    public let limit: Int
    private let used = Mutex<Set<String>>([])

    public init(limit: Int = defaultLimit) {
        self.limit = limit
    }

    /// Whether `topic` may be sent to: used before, or taken now within the limit.
    public func admit(_ topic: String) -> Bool {
        used.withLock { used in
            if used.contains(topic) { return true }
            guard used.count < limit else { return false }
            used.insert(topic)
            return true
        }
    }
}
