import KafkaClient

/// The intake's bounds on what it holds (buffered plus unacknowledged messages), in messages and in bytes
/// (`KafkaMessage.retainedBytes`), and the decisions taken on them. Both bounds hold to within one record:
/// a poll takes only as many records as fit even if each is as large as the consumer's limits allow.
struct IntakeBounds {
    var maxMessages: Int
    var maxBytes: Int
    /// The most one record can add (`KafkaMessage.Limits.maxRetainedBytes`).
    var maxRecordBytes: Int
    var batchSize: Int

    func isFull(messages: Int, bytes: Int) -> Bool { messages >= maxMessages || bytes >= maxBytes }

    /// How many records the next poll may take (0 when full).
    func room(messages: Int, bytes: Int) -> Int {
        guard !isFull(messages: messages, bytes: bytes) else { return 0 }
        return min(maxMessages - messages, max(1, (maxBytes - bytes) / max(1, maxRecordBytes)))
    }

    /// Paused partitions resume once both are down to half.
    func resumes(messages: Int, bytes: Int) -> Bool { messages <= maxMessages / 2 && bytes <= maxBytes / 2 }

    /// A waiting poll thread is woken once there is room for a batch and a quarter of the bytes, not for
    /// every acknowledgement.
    func wakes(messages: Int, bytes: Int) -> Bool {
        messages <= max(0, maxMessages - batchSize) && bytes <= maxBytes - maxBytes / 4
    }
}
