import AttestCore
import AttestJobs
import AttestVerifier
import Foundation
import KafkaClient
import Lifecycle
import Observability
import Synchronization
import Testing
@testable import Worker

/// A broker that refuses a publication for good (librdkafka's mock cluster answering MESSAGE_TOO_LARGE or
/// INVALID_RECORD): the worker publishes the smallest dead letter in its place, logs and counts it, the
/// offset is committed, and the worker stops cleanly. Before, the refusal was produced again every 100 ms
/// forever and the partition never committed.
@Suite(.serialized) struct RefusedPublishTests {
    static func properties(_ bootstrap: String) -> [String: String] {
        ["bootstrap.servers": bootstrap, "enable.metrics.push": "false", "log_level": "3"]
    }

    @Test(arguments: [KafkaError.Code.messageTooLarge, KafkaError.Code.invalidRecord])
    func aRefusedPublicationIsReplacedByItsSmallestDeadLetter(code: Int32) async throws {
        let observed = try await Self.onOwnThread { () throws -> (letters: [KafkaMessage], committed: Int64?, log: String, metrics: String) in
            let cluster = try KafkaMockCluster()
            let (jobs, dead) = ("jobs-\(UUID().uuidString.prefix(8))", "dead-\(UUID().uuidString.prefix(8))")
            let group = "g-\(UUID().uuidString.prefix(8))"
            // One message that is not a job, on its way to a dead letter the broker will refuse once.
            let producer = try KafkaProducer(properties: Self.properties(cluster.bootstrapServers))
            try producer.produce(topic: jobs, key: Array("k".utf8), value: Array("not json".utf8), headers: []) { _ in }
            try producer.produce(topic: dead, key: nil, value: Array("{}".utf8), headers: []) { _ in }  // creates the topic
            guard producer.flush(timeoutMs: 10_000) else { throw KafkaError(code: KafkaError.Code.timedOut) }
            producer.close(timeoutMs: 1_000)
            cluster.failProduceRequests([code])

            let lines = Mutex<[String]>([])
            let logger = Logger(level: .info) { line in lines.withLock { $0.append(line) } }
            let metrics = WorkerMetrics()
            let clock = FixedClock(Timestamp(seconds: 1_777_000_000))
            let processor = BatchProcessor(
                verifier: JobVerifier(trust: BatchProcessorTests.trust, clock: clock),
                store: FakeStore(), devices: DeviceCache(),
                settings: BatchProcessor.Settings(verdictsTopic: "verdicts", deadLetterTopic: dead), metrics: metrics, logger: logger)
            var consumer = Self.properties(cluster.bootstrapServers)
            consumer.merge(["group.id": group, "auto.offset.reset": "earliest", "session.timeout.ms": "3000",
                "heartbeat.interval.ms": "500", "fetch.wait.max.ms": "50", "auto.commit.interval.ms": "200"]) { _, b in b }
            let service = try WorkerService(
                settings: WorkerService.Settings(
                    topics: [jobs], consumerProperties: consumer, producerProperties: Self.properties(cluster.bootstrapServers),
                    batchSize: 16, maxBufferedMessages: 64, messageLimits: .worker(maxMessageBytes: 256 * 1024)),
                processors: [processor], clock: clock, logger: logger, metrics: metrics)
            let services = ServiceGroup(service.services, shutdownTimeout: .seconds(86_400))
            let stopped = Mutex(false)
            Thread.detachNewThread {
                try? services.run()
                stopped.withLock { $0 = true }
            }
            // Wait for the replacement on the dead-letter topic (beside the placeholder that created it).
            var reader = Self.properties(cluster.bootstrapServers)
            reader.merge(["group.id": "reader-\(group)", "auto.offset.reset": "earliest", "enable.auto.commit": "false",
                "fetch.wait.max.ms": "50", "session.timeout.ms": "3000", "heartbeat.interval.ms": "500"]) { _, b in b }
            let letters = try KafkaConsumer(properties: reader, topics: [dead], delegate: nil)
            var received: [KafkaMessage] = []
            let deadline = Date().addingTimeInterval(30)
            while received.isEmpty && Date() < deadline {
                received += letters.poll(max: 10, timeoutMs: 100).filter { $0.value != Array("{}".utf8) }
            }
            letters.close()
            Thread.sleep(forTimeInterval: 1)  // an auto-commit interval or more
            services.triggerGracefulShutdown()
            let stopDeadline = Date().addingTimeInterval(15)
            while !stopped.withLock({ $0 }) && Date() < stopDeadline { Thread.sleep(forTimeInterval: 0.05) }
            let probe = try KafkaConsumer(properties: consumer, topics: [jobs], delegate: nil)
            let committed = try probe.committed([TopicPartition(topic: jobs, partition: 0), TopicPartition(topic: jobs, partition: 1),
                TopicPartition(topic: jobs, partition: 2), TopicPartition(topic: jobs, partition: 3)], timeoutMs: 5_000)
            probe.close()
            let offset = committed.values.compactMap { $0 }.max()
            return withExtendedLifetime(cluster) {
                (received, stopped.withLock { $0 } ? offset : -1, lines.withLock { $0.joined(separator: "\n") },
                    metrics.registry.render())
            }
        }
        let letter = try #require(observed.letters.first.flatMap { JSONValue.parse($0.value) }, "no replacement\n\(observed.log)")
        #expect(observed.letters.count == 1)
        #expect(letter["reason"] == .string("job_invalid"))
        #expect(letter["valueBase64"] == .string("") && letter["originalBytes"] == .int(8), "the smallest envelope")
        #expect(observed.letters.first?.key == Array("k".utf8))
        #expect(observed.log.contains("the broker refused the message; publishing the smallest dead letter instead"))
        #expect(observed.metrics.contains("attest_publish_refused_total{error=\"\(KafkaError(code: code).name)\"} 1"), "\(observed.metrics)")
        #expect(observed.committed == 1, "the offset was committed and the worker stopped")
    }

    static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }
}
