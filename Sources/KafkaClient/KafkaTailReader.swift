internal import CRdKafka
import Durations
import Glibc

/// Reads every partition of one topic from where each ended when it was created (or from its first
/// message), without a consumer group: the partitions are assigned directly, so no join or rebalance delays
/// the first message, and nothing published after `init` returns is missed (each partition starts at the
/// high watermark read then, not at an end resolved later). What a client awaiting its replies needs, and a
/// test reading a topic through; offsets are never stored or committed.
///
/// One thread at a time: `poll` and `close` are not for concurrent use.
public final class KafkaTailReader {
    private var client: RDKafkaHandle?
    private let limits: KafkaMessage.Limits
    public let partitions: [TopicPartition]

    /// Where each partition is read from.
    public enum Start: Sendable {
        /// Its high watermark when `init` ran: only what is published after.
        case end
        /// Its first message still kept.
        case beginning
    }

    /// `properties` are librdkafka settings (bootstrap.servers, security); group settings are not needed.
    /// Waits up to `timeoutMs` for the topic's metadata and watermarks: throws when the topic does not exist
    /// or the broker does not answer.
    public init(
        properties: [String: String], topic: String, from start: Start = .end, limits: KafkaMessage.Limits = .unlimited,
        timeoutMs: Int32 = 10_000
    ) throws(KafkaError) {
        self.limits = limits
        let config = try RDKafkaConfig(properties)
        // librdkafka serves assignments through a group handle, so one needs a group.id; with `assign` and no
        // subscription the member never joins it, and nothing is committed.
        if properties["group.id"] == nil { try config.set("group.id", "attest-tail-reader") }
        try config.set("enable.auto.commit", "false")
        try config.set("enable.auto.offset.store", "false")
        let client = try RDKafkaHandle(RD_KAFKA_CONSUMER, config: config, context: nil)
        rd_kafka_poll_set_consumer(client.pointer)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(timeoutMs))
        let ids = try Self.partitionIds(client, topic, until: deadline, clock: clock)
        var offsets = [TopicPartition: Int64]()
        for id in ids {
            let partition = TopicPartition(topic: topic, partition: id)
            guard start == .end else {
                offsets[partition] = Int64(RD_KAFKA_OFFSET_BEGINNING)
                continue
            }
            var low: Int64 = 0
            var high: Int64 = 0
            let wait = Int32(clamping: max(1, clock.now.duration(to: deadline).wholeMilliseconds))
            let err = rd_kafka_query_watermark_offsets(client.pointer, topic, id, &low, &high, wait)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw client.error(err, reason: "watermarks of \(topic)[\(id)]") }
            offsets[partition] = high
        }
        let list = RDKafkaTopicPartitionList(offsets: offsets)
        let err = rd_kafka_assign(client.pointer, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw client.error(err) }
        partitions = offsets.keys.sorted { $0.partition < $1.partition }
        self.client = client
    }

    deinit {
        close()
    }

    /// The topic's partition ids once its metadata names a leader for each (a topic created a moment ago
    /// may not have them yet: asked again until `deadline`).
    private static func partitionIds(
        _ client: RDKafkaHandle, _ topic: String, until deadline: ContinuousClock.Instant, clock: ContinuousClock
    ) throws(KafkaError) -> [Int32] {
        guard let handle = rd_kafka_topic_new(client.pointer, topic, nil) else {
            throw KafkaError(RD_KAFKA_RESP_ERR__INVALID_ARG, message: "invalid topic \(topic)")
        }
        defer { rd_kafka_topic_destroy(handle) }
        var last = KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, message: "no metadata for \(topic)")
        repeat {
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let wait = Int32(clamping: max(1, min(2_000, clock.now.duration(to: deadline).wholeMilliseconds)))
            let err = rd_kafka_metadata(client.pointer, 0, handle, &metadata, wait)
            if err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata {
                defer { rd_kafka_metadata_destroy(metadata) }
                if metadata.pointee.topic_cnt == 1 {
                    let entry = metadata.pointee.topics[0]
                    if entry.err == RD_KAFKA_RESP_ERR_NO_ERROR, entry.partition_cnt > 0 {
                        let partitions = UnsafeBufferPointer(start: entry.partitions, count: Int(entry.partition_cnt))
                        if partitions.allSatisfy({ $0.leader >= 0 }) { return partitions.map(\.id) }
                    } else if entry.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                        last = KafkaError(entry.err, message: "\(topic): \(String(cString: rd_kafka_err2str(entry.err)))")
                    }
                }
            } else if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                last = client.error(err)
            }
            usleep(100_000)
        } while clock.now < deadline
        throw last
    }

    /// Up to `max` messages, waiting at most `timeoutMs` for the first and not at all for the rest. Errors
    /// (end of partition, a broker gone for a while) are not messages: librdkafka recovers from them itself.
    public func poll(max: Int, timeoutMs: Int32) -> [KafkaMessage] {
        guard max > 0, let client else { return [] }
        var messages: [KafkaMessage] = []
        while messages.count < max {
            guard let message = rd_kafka_consumer_poll(client.pointer, messages.isEmpty ? timeoutMs : 0) else { break }
            defer { rd_kafka_message_destroy(message) }
            if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                messages.append(KafkaMessage(copying: message, limits: limits))
            }
        }
        return messages
    }

    /// Stops fetching and destroys the handle; idempotent.
    public func close() {
        guard let client else { return }
        _ = rd_kafka_consumer_close(client.pointer)
        self.client = nil
    }
}
