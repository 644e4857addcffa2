import Foundation
import KafkaClient
import Testing

/// Against the real broker of `ops/stack up` (Tansu on loopback). CI always provides it: a missing
/// ATTEST_KAFKA_BROKERS fails these tests rather than skipping them.
@Suite struct BrokerIntegrationTests {
    /// bootstrap.servers from ATTEST_KAFKA_BROKERS plus the stack's ATTEST_KAFKA_PROPERTIES.
    static func brokerProperties() throws -> [String: String] {
        let environment = ProcessInfo.processInfo.environment
        let brokers = try #require(
            environment["ATTEST_KAFKA_BROKERS"],
            "ATTEST_KAFKA_BROKERS is not set: run `ops/stack up` and `eval \"$(ops/stack env)\"`")
        var properties = try KafkaProperties.parse(environment["ATTEST_KAFKA_PROPERTIES"] ?? "")
        properties["bootstrap.servers"] = brokers
        return properties
    }

    @Test func produceConsumeCommitAndResumeOnAFreshTopic() async throws {
        struct Observed: Sendable {
            var acks: [Result<(partition: Int32, offset: Int64), KafkaError>] = []
            var received: [KafkaMessage] = []
            var committed: [TopicPartition: Int64?] = [:]
            var resumed: [KafkaMessage] = []
            var errors: [KafkaError] = []
        }
        let base = try Self.brokerProperties()
        let observed = try await onOwnThread { () throws -> Observed in
            var observed = Observed()
            let topic = uniqueName("kafkaclient-it")
            let group = uniqueName("kafkaclient-it")
            let admin = try KafkaAdmin(properties: base)
            try admin.createTopics([(name: topic, partitions: 3)], timeoutMs: 10_000)
            try admin.createTopics([(name: topic, partitions: 3)], timeoutMs: 10_000)  // exists: no error

            let errors = ErrorLog()
            let producer = try KafkaProducer(properties: base.merging(["linger.ms": "1"]) { $1 }, onError: errors.handler)
            let batch = (0..<30).map { index in
                (key: bytes("device-\(index)"), value: bytes("job-\(index)"),
                 headers: [(name: "attempt", value: bytes("\(index % 3)"))])
            }
            observed.acks = try produceAll(producer, topic: topic, batch)

            // The stack's own settings (ATTEST_KAFKA_PROPERTIES) win over the test defaults.
            let consumerSettings = consumerProperties(base["bootstrap.servers"]!, group: group, sessionTimeoutMs: 6000)
                .merging(base) { $1 }
            let first = try KafkaConsumer(properties: consumerSettings, topics: [topic], delegate: nil, onError: errors.handler)
            observed.received = try poll(first, for: "30 messages") { $0.count >= 30 }
            // Processed everything: store last + 1 per partition, commit, read it back.
            var next: [TopicPartition: Int64] = [:]
            for message in observed.received {
                next[message.topicPartition] = max(next[message.topicPartition] ?? 0, message.offset + 1)
            }
            try first.storeOffsets(next)
            try first.commitSync()
            observed.committed = try first.committed(Array(next.keys), timeoutMs: 10_000)
            first.close()

            // Five more jobs: a new member of the same group gets exactly those, not the committed ones.
            _ = try produceAll(producer, topic: topic, (30..<35).map { (key: bytes("device-\($0)"), value: bytes("job-\($0)"), headers: []) })
            producer.close(timeoutMs: 10_000)
            let second = try KafkaConsumer(properties: consumerSettings, topics: [topic], delegate: nil, onError: errors.handler)
            observed.resumed = try poll(second, for: "the 5 new messages") { $0.count >= 5 }
            let settle = ContinuousClock.now.advanced(by: .milliseconds(500))
            while ContinuousClock.now < settle { observed.resumed += second.poll(max: 100, timeoutMs: 100) }
            second.close()
            try admin.deleteTopics([topic])
            observed.errors = errors.all
            return observed
        }
        #expect(observed.acks.allSatisfy { $0.acknowledgement != nil }, "deliveries: \(observed.acks)")
        #expect(Set(observed.received.map { String(decoding: $0.value, as: UTF8.self) }) == Set((0..<30).map { "job-\($0)" }))
        for message in observed.received {
            let index = Int(String(decoding: message.value, as: UTF8.self).dropFirst(4))!
            #expect(message.key == bytes("device-\(index)"))
            #expect(message.headers.count == 1 && message.headers[0].name == "attempt" && message.headers[0].value == bytes("\(index % 3)"))
        }
        // Each acknowledgement names where the consumer found the message.
        let found = Set(observed.received.map { "\($0.partition)/\($0.offset)" })
        #expect(Set(observed.acks.compactMap { $0.acknowledgement.map { "\($0.partition)/\($0.offset)" } }) == found)
        var expectedCommits: [TopicPartition: Int64?] = [:]
        for message in observed.received {
            expectedCommits[message.topicPartition] = max((expectedCommits[message.topicPartition] ?? nil) ?? 0, message.offset + 1)
        }
        #expect(observed.committed == expectedCommits)
        #expect(Set(observed.resumed.map { String(decoding: $0.value, as: UTF8.self) }) == Set((30..<35).map { "job-\($0)" }))
        #expect(observed.resumed.count == 5)
    }

    /// A deleted topic's records are gone (the same name created again holds only what comes after), and
    /// deleting a topic that does not exist is no failure: the benchmarks delete their topics at the end.
    @Test func deletedTopicsAreGoneAndDeletingAMissingOneIsNoFailure() async throws {
        let base = try Self.brokerProperties()
        let read = try await onOwnThread { () throws -> [String] in
            let topic = uniqueName("kafkaclient-delete")
            let admin = try KafkaAdmin(properties: base)
            try admin.createTopics([(name: topic, partitions: 1)])
            let producer = try KafkaProducer(properties: base.merging(["linger.ms": "1"]) { $1 })
            defer { producer.close(timeoutMs: 10_000) }
            _ = try produceAll(producer, topic: topic, [(key: nil, value: bytes("before"), headers: [])])
            try admin.deleteTopics([topic])
            try admin.deleteTopics([topic, uniqueName("kafkaclient-never")])
            try admin.createTopics([(name: topic, partitions: 1)])
            let marker = try produceAll(producer, topic: topic, [(key: nil, value: bytes("after"), headers: [])])
            guard marker.first?.acknowledgement != nil else { throw ScenarioError(description: "the marker was not acknowledged: \(marker)") }
            let consumer = try KafkaConsumer(
                properties: consumerProperties(base["bootstrap.servers"]!, group: uniqueName("kafkaclient-delete"), sessionTimeoutMs: 6000)
                    .merging(base) { $1 },
                topics: [topic], delegate: nil)
            defer { consumer.close() }
            let received = try poll(consumer, for: "the marker") { $0.contains { $0.value == bytes("after") } }
            try admin.deleteTopics([topic])
            return received.map { String(decoding: $0.value, as: UTF8.self) }
        }
        #expect(read == ["after"])
    }
}
