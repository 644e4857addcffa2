internal import CRdKafka

/// Owns an `rd_kafka_topic_partition_list_t`: built from Swift values for a call, or adopted when
/// librdkafka allocates one for the caller (`rd_kafka_assignment`).
final class RDKafkaTopicPartitionList {
    let pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

    /// librdkafka's `RD_KAFKA_PARTITION_UA` (a cast macro, which Swift does not import): "any partition",
    /// as used in subscriptions.
    static let unassignedPartition: Int32 = -1

    init(_ partitions: some Collection<TopicPartition>) {
        pointer = rd_kafka_topic_partition_list_new(Int32(partitions.count))
        for item in partitions {
            rd_kafka_topic_partition_list_add(pointer, item.topic, item.partition)
        }
    }

    init(offsets: [TopicPartition: Int64]) {
        pointer = rd_kafka_topic_partition_list_new(Int32(offsets.count))
        for (item, offset) in offsets {
            rd_kafka_topic_partition_list_add(pointer, item.topic, item.partition).pointee.offset = offset
        }
    }

    init(subscribing topics: [String]) {
        pointer = rd_kafka_topic_partition_list_new(Int32(topics.count))
        for topic in topics {
            rd_kafka_topic_partition_list_add(pointer, topic, Self.unassignedPartition)
        }
    }

    /// Takes over a list librdkafka allocated for the caller.
    init(adopting pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) {
        self.pointer = pointer
    }

    deinit {
        rd_kafka_topic_partition_list_destroy(pointer)
    }

    var elements: UnsafeMutableBufferPointer<rd_kafka_topic_partition_t> {
        Self.elements(of: pointer)
    }

    var partitions: [TopicPartition] {
        Self.partitions(of: pointer)
    }

    /// The first per-partition error librdkafka recorded in the list, naming the partition.
    var firstError: KafkaError? {
        guard let failed = elements.first(where: { $0.err != RD_KAFKA_RESP_ERR_NO_ERROR }) else { return nil }
        var error = KafkaError(failed.err)
        error.message += " (\(String(cString: failed.topic))[\(failed.partition)])"
        return error
    }

    /// The partitions of a list this code does not own (one passed to a callback).
    static func partitions(of list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) -> [TopicPartition] {
        elements(of: list).map { TopicPartition(topic: String(cString: $0.topic), partition: $0.partition) }
    }

    private static func elements(
        of list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>
    ) -> UnsafeMutableBufferPointer<rd_kafka_topic_partition_t> {
        UnsafeMutableBufferPointer(start: list.pointee.elems, count: Int(list.pointee.cnt))
    }
}
