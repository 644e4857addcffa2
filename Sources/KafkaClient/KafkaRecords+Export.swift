/// Consumed records and partitions are plain values in KafkaRecords (no librdkafka), so that classification
/// and its fuzz target can use them; users of the client see them as part of it.
@_exported import KafkaRecords
