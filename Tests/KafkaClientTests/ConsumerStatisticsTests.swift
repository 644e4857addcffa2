import Foundation
import KafkaClient
import Synchronization
import Testing

/// librdkafka's statistics document as ``ConsumerStatistics`` reads it, and the stored lag a consumer
/// derives from it (against the mock cluster).
@Suite struct ConsumerStatisticsTests {
    /// A partition entry as librdkafka writes it (offsets it does not know are -1001).
    private func partition(_ id: Int, hi: Int64, lo: Int64 = 0, stored: Int64 = -1001, committed: Int64 = -1001) -> String {
        """
        "\(id)": {"partition": \(id), "broker": 1, "leader": 1, "desired": true, "fetch_state": "active", \
        "next_offset": \(hi), "app_offset": -1001, "stored_offset": \(stored), "committed_offset": \(committed), \
        "lo_offset": \(lo), "hi_offset": \(hi), "ls_offset": \(hi), "consumer_lag": -1, "consumer_lag_stored": -1}
        """
    }

    private func document(_ topics: [String: [String]]) -> [UInt8] {
        let body = topics.map { name, partitions in
            "\"\(name)\": {\"topic\": \"\(name)\", \"partitions\": {\(partitions.joined(separator: ", "))}}"
        }.joined(separator: ", ")
        return Array(#"{"name": "c#consumer-1", "type": "consumer", "ts": 123456789012, "brokers": {}, "topics": {\#(body)}}"#.utf8)
    }

    @Test func lagCountsFromTheStoredOffsetThenTheCommittedOneThenTheLogStart() throws {
        let statistics = try #require(ConsumerStatistics(json: document(["jobs": [
            partition(0, hi: 100, stored: 90, committed: 80),
            partition(1, hi: 100, committed: 80),
            partition(2, hi: 100, lo: 30),
            // A committed offset the retention deleted: the group restarts at the log's start.
            partition(3, hi: 100, lo: 50, committed: 10),
            // Stored beyond the end librdkafka last saw (a fetch response older than the store).
            partition(4, hi: 100, stored: 120),
            partition(5, hi: 100, stored: 100),
        ]])))
        let lag = statistics.partitions.mapValues(\.lag)
        #expect(lag[TopicPartition(topic: "jobs", partition: 0)] == 10)
        #expect(lag[TopicPartition(topic: "jobs", partition: 1)] == 20)
        #expect(lag[TopicPartition(topic: "jobs", partition: 2)] == 70)
        #expect(lag[TopicPartition(topic: "jobs", partition: 3)] == 50)
        #expect(lag[TopicPartition(topic: "jobs", partition: 4)] == 0)
        #expect(lag[TopicPartition(topic: "jobs", partition: 5)] == 0)
    }

    @Test func partitionsWithoutAKnownEndOrValidIdAreLeftOut() throws {
        let statistics = try #require(ConsumerStatistics(json: document([
            "jobs": [
                partition(0, hi: -1001),  // no fetch response yet
                partition(-1, hi: 5),  // librdkafka's internal unassigned partition
                #""7": {"partition": 4294967296, "hi_offset": 5}"#,  // not an Int32
                #""8": {"partition": "8", "hi_offset": 5}"#,
                #""9": {"partition": 9, "hi_offset": 5.5}"#,
                partition(2, hi: 7),
            ],
            "verdicts": [partition(0, hi: 3, stored: 1)],
        ])))
        #expect(statistics.partitions.keys.sorted { $0.description < $1.description } == [
            TopicPartition(topic: "jobs", partition: 2), TopicPartition(topic: "verdicts", partition: 0),
        ])
        #expect(statistics.partitions[TopicPartition(topic: "jobs", partition: 2)]?.lag == 7)
        #expect(statistics.partitions[TopicPartition(topic: "verdicts", partition: 0)]?.lag == 2)
    }

    @Test func aPartitionWithNoStartKnownHasNoLag() {
        #expect(ConsumerStatistics.Partition(high: 10).lag == nil)
        #expect(ConsumerStatistics.Partition(high: 10, committed: 4).lag == 6)
    }

    @Test(arguments: [
        "", "not json", "[]", #"{"topics": []}"#, #"{"name": "no topics"}"#, #"{"topics": {"a": 1}} trailing"#,
        #"{"topics": {}, "topics": {}}"#,
    ])
    func documentsThatAreNotStatisticsAreIgnored(text: String) {
        #expect(ConsumerStatistics(json: Array(text.utf8)) == nil)
    }

    @Test func aDocumentPastTheSizeBoundIsIgnored() {
        var json = document(["jobs": [partition(0, hi: 5)]])
        json.removeLast()  // the closing brace, to pad inside the object with whitespace
        json += [UInt8](repeating: 0x20, count: 16 << 20) + Array("}".utf8)
        #expect(ConsumerStatistics(json: json) == nil)
    }

    @Test func storedLagFollowsStoredOffsetsOfAssignedPartitionsOnly() async throws {
        struct Observed: Sendable {
            var beforeStatistics: [TopicPartition: Int64]?
            var polledFour: Int64?
            var storedFour: Int64?
            var storedAll: Int64?
            var assignedOnly = false
        }
        let observed = try await onOwnThread { () throws -> Observed in
            var observed = Observed()
            let cluster = try KafkaMockCluster()
            let topic = uniqueName("stats")
            let producer = try KafkaProducer(properties: producerProperties(cluster.bootstrapServers))
            let acks = try produceAll(producer, topic: topic, (0..<10).map { (key: bytes("same"), value: bytes("\($0)"), headers: []) })
            producer.close(timeoutMs: 5_000)
            let partition = TopicPartition(topic: topic, partition: try acks[0].get().partition)

            let withoutStatistics = try KafkaConsumer(
                properties: consumerProperties(cluster.bootstrapServers, group: uniqueName("g")), topics: [topic], delegate: nil)
            _ = try poll(withoutStatistics, for: "a first message", max: 1) { !$0.isEmpty }
            observed.beforeStatistics = withoutStatistics.storedLag()
            withoutStatistics.close()

            var properties = consumerProperties(cluster.bootstrapServers, group: uniqueName("g"))
            properties["statistics.interval.ms"] = "100"
            let consumer = try KafkaConsumer(properties: properties, topics: [topic], delegate: nil)
            var received: [KafkaMessage] = []
            while received.count < 4 {
                received += try poll(consumer, for: "4 messages", max: 4 - received.count) { !$0.isEmpty }
            }
            // Paused, polls serve the statistics without returning messages.
            consumer.pause([partition])
            // Nothing stored or committed: all ten are behind, though four were polled (the position is 4).
            _ = try poll(consumer, for: "statistics") { _ in consumer.storedLag()?[partition] != nil }
            observed.polledFour = consumer.storedLag()?[partition]
            try consumer.storeOffsets([partition: 4])
            _ = try poll(consumer, for: "the stored offset in the statistics") { _ in consumer.storedLag()?[partition] == 6 }
            observed.storedFour = consumer.storedLag()?[partition]
            consumer.resume([partition])
            received += try poll(consumer, for: "6 more messages") { $0.count >= 6 }
            try consumer.storeOffsets([partition: 10])
            consumer.pause([partition])
            _ = try poll(consumer, for: "everything stored") { _ in consumer.storedLag()?[partition] == 0 }
            observed.storedAll = consumer.storedLag()?[partition]
            observed.assignedOnly = consumer.storedLag().map { Set($0.keys).isSubset(of: Set(consumer.assignment())) } ?? false
            consumer.close()
            return withExtendedLifetime(cluster) { observed }
        }
        #expect(observed.beforeStatistics == nil)
        #expect(observed.polledFour == 10)
        #expect(observed.storedFour == 6)
        #expect(observed.storedAll == 0)
        #expect(observed.assignedOnly)
    }
}
