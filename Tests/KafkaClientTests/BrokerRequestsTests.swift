import Foundation
import KafkaClient
import Testing

/// The requests a client has sent, as ``BrokerRequests`` reads them from librdkafka's statistics, and as
/// both clients report them (against the mock cluster).
@Suite struct BrokerRequestsTests {
    private func document(_ brokers: String) -> [UInt8] {
        Array(#"{"name": "c#producer-1", "type": "producer", "brokers": {\#(brokers)}, "topics": {}}"#.utf8)
    }

    @Test func countsAreSummedOverBrokersByRequestName() throws {
        let requests = try #require(BrokerRequests(json: document("""
            "127.0.0.1:9092/1": {"name": "127.0.0.1:9092/1", "nodeid": 1, "req": {"Produce": 40, "Fetch": 0, "Metadata": 2}},
            "127.0.0.1:9093/2": {"name": "127.0.0.1:9093/2", "nodeid": 2, "req": {"Produce": 2, "Metadata": 1}},
            "GroupCoordinator": {"name": "GroupCoordinator", "nodeid": -1, "req": {"Heartbeat": 7}}
            """)))
        #expect(requests.counts == ["Produce": 42, "Metadata": 3, "Heartbeat": 7])
        #expect(requests.total == 52)
    }

    @Test func countsThatAreNotNonNegativeIntegersAreLeftOut() throws {
        let requests = try #require(BrokerRequests(json: document("""
            "a": {"req": {"Produce": -5, "Fetch": 1.5, "Metadata": "3", "OffsetCommit": 4, "\(String(repeating: "x", count: 65))": 1}},
            "b": {"req": [1, 2]},
            "c": {"no req": {}},
            "d": {"req": {"Fetch": 9223372036854775807}},
            "e": {"req": {"Fetch": 9223372036854775807}}
            """)))
        // Two brokers' largest counts saturate instead of trapping.
        #expect(requests.counts == ["OffsetCommit": 4, "Fetch": .max])
    }

    @Test(arguments: ["", "not json", "[]", #"{"brokers": {}} trailing"#])
    func documentsThatAreNotJSONAreRefused(text: String) {
        #expect(BrokerRequests(json: Array(text.utf8)) == nil)
    }

    @Test func aDocumentWithoutBrokersCountsNothing() throws {
        #expect(try #require(BrokerRequests(json: Array(#"{"brokers": []}"#.utf8))).counts.isEmpty)
    }

    @Test func aReadingLessAnEarlierOneIsWhatWasSentBetween() {
        let earlier = BrokerRequests(counts: ["Produce": 10, "Fetch": 5, "Metadata": 1])
        let later = BrokerRequests(counts: ["Produce": 25, "Fetch": 5, "Heartbeat": 2, "Metadata": 0])
        // A count that went down belongs to another client's life: it counts from zero.
        #expect(later.since(earlier).counts == ["Produce": 15, "Heartbeat": 2])
    }

    @Test func bothClientsReportTheirRequests() async throws {
        let (produced, fetched) = try await onOwnThread { () throws -> (BrokerRequests?, BrokerRequests?) in
            let cluster = try KafkaMockCluster()
            let topic = uniqueName("requests")
            var properties = producerProperties(cluster.bootstrapServers)
            properties["statistics.interval.ms"] = "100"
            let producer = try KafkaProducer(properties: properties)
            _ = try produceAll(producer, topic: topic, (0..<3).map { (key: bytes("k"), value: bytes("\($0)"), headers: []) })
            let deadline = ContinuousClock.now + .seconds(10)
            while (producer.requestCounts()?.counts["Produce"] ?? 0) == 0 && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.02)
            }
            producer.close(timeoutMs: 5_000)

            var consumerSettings = consumerProperties(cluster.bootstrapServers, group: uniqueName("g"))
            consumerSettings["statistics.interval.ms"] = "100"
            let consumer = try KafkaConsumer(properties: consumerSettings, topics: [topic], delegate: nil)
            _ = try poll(consumer, for: "a message", max: 1) { !$0.isEmpty }
            _ = try poll(consumer, for: "fetches in the statistics") { _ in (consumer.requestCounts()?.counts["Fetch"] ?? 0) > 0 }
            let fetched = consumer.requestCounts()
            consumer.close()
            return withExtendedLifetime(cluster) { (producer.requestCounts(), fetched) }
        }
        #expect((produced?.counts["Produce"] ?? 0) >= 1)
        #expect((fetched?.counts["Fetch"] ?? 0) >= 1)
        #expect((fetched?.counts["Produce"] ?? 0) == 0)
    }
}
