import AttestCore
import AttestCrypto
import AttestJobs
import Foundation
import KafkaClient
import Synchronization
import Testing

/// A record as a hostile producer sends it: any key, headers and create time.
struct HostileRecord {
    var key: [UInt8]?
    var value: [UInt8]
    var headers: [(name: String, value: [UInt8])] = []
    var timestampMs: Int64? = nil
}

/// Produces `records` in order with a producer whose `message.max.bytes` admits them (the broker takes
/// records over 1 MB) and waits for every acknowledgement.
func produceHostile(_ topic: String, _ records: [HostileRecord], maxBytes: Int = 4_000_000) throws {
    var properties = Stack.kafkaProperties.filter {
        !["group.id", "session.timeout.ms", "heartbeat.interval.ms", "fetch.wait.max.ms", "auto.offset.reset"].contains($0.key)
    }
    properties["bootstrap.servers"] = try Stack.brokers
    properties["message.max.bytes"] = "\(maxBytes)"
    let producer = try KafkaProducer(properties: properties)
    let failures = Mutex<[String]>([])
    for record in records {
        while true {
            do {
                try producer.produce(
                    topic: topic, key: record.key, value: record.value, headers: record.headers, timestampMs: record.timestampMs
                ) { result in
                    if case .failure(let error) = result { failures.withLock { $0.append(error.description) } }
                }
                break
            } catch {
                try #require(error.code == KafkaError.Code.queueFull, "\(error)")
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }
    try #require(producer.flush(timeoutMs: 60_000))
    producer.close(timeoutMs: 5000)
    try #require(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
}

extension LiveStack {
    /// Hostile producers against a real worker (issue 11 items 2, 3, 10): records whose dead letters used to
    /// exceed the producer's limit (and wedge the partition), Kafka timestamps that used to trap, oversize and
    /// numerous headers, binary values. Every record ends as a verdict or a dead letter that fits, no worker
    /// dies, the valid jobs behind them in the same partition are decided and their offsets committed, and
    /// SIGTERM stops the worker cleanly (not on its watchdog).
    @Suite struct HardeningIntakeTests {
        static let producerLimit = 1_000_000

        /// The hostile records, each with the dead-letter reason it must get.
        static func hostile() -> [(record: HostileRecord, reason: String)] {
            let notJSON = Array("not json".utf8)
            var cases: [(HostileRecord, String)] = []
            // Oversize keys: the reproduced 440,000 bytes and others up to near what the broker takes.
            for size in [1_025, 100_000, 440_000, 700_000, 999_000, 1_500_000] {
                cases.append((HostileRecord(key: [UInt8](repeating: UInt8(size % 251), count: size), value: notJSON), "job_invalid"))
            }
            // An oversize key on an oversize value, and on a job-like value without a usable jobId.
            cases.append((HostileRecord(key: [UInt8](repeating: 7, count: 600_000), value: [UInt8](repeating: 0x7b, count: 300_000)), "too_large"))
            cases.append((HostileRecord(key: [UInt8](repeating: 8, count: 300_000), value: Array(#"{"jobId":""}"#.utf8)), "job_invalid"))
            // Kafka timestamps that overflow when scaled (the reproduced 9.3e15 ms), the extremes, negatives.
            for ms: Int64 in [9_300_000_000_000_000, .max, -9_300_000_000_000_000, -2, 253_402_300_800_000] {
                cases.append((HostileRecord(key: Array("ts".utf8), value: [0xff, 0x00, 0xfe], timestampMs: ms), "job_invalid"))
            }
            // Headers: many, large, long names; with a value that is binary or not a job.
            let many = (0..<500).map { (name: "h\($0)", value: [UInt8](repeating: 1, count: 1000)) }
            cases.append((HostileRecord(key: nil, value: [0x00, 0x01], headers: many), "job_invalid"))
            let large = [(name: String(repeating: "n", count: 50_000), value: [UInt8](repeating: 2, count: 400_000))]
            cases.append((HostileRecord(key: Array("h".utf8), value: Array("[1]".utf8), headers: large), "job_invalid"))
            // Binary and empty values, no key.
            cases.append((HostileRecord(key: nil, value: (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 37) }), "job_invalid"))
            cases.append((HostileRecord(key: [], value: []), "job_invalid"))
            return cases.map { (record: $0.0, reason: $0.1) }
        }

        @Test func hostileRecordsEndAsDeadLettersThatFitAndThePartitionKeepsFlowing() throws {
            let topics = try Stack.topics("hostile", partitions: 1)
            let stream = try JobStream(devices: 2, assertions: 2)
            try Jobs.registerApp(stream.bundleId)
            let hostile = Self.hostile()
            let group = "g-\(UUID().uuidString)"
            let worker = try WorkerProcess(topics: topics, group: group)
            // Valid jobs before and after the hostile ones, all in the one partition; two of them under an
            // oversize key and behind many headers (nothing valid is dead-lettered), and an invalid job under
            // an oversize key (its job_invalid verdict is keyed by the key's digest).
            let half = stream.messages.count / 2
            var after = stream.messages[half...].map { HostileRecord(key: $0.key, value: $0.value) }
            after[0].key = [UInt8](repeating: 9, count: 900_000)
            after[1].headers = (0..<300).map { (name: "x-\($0)", value: [UInt8](repeating: 5, count: 2000)) }
            let invalidKey = [UInt8](repeating: 4, count: 500_000)
            let invalidJobId = "invalid-\(stream.bundleId)"
            let invalid = HostileRecord(key: invalidKey, value: Array(#"{"jobId":"\#(invalidJobId)","kind":"assertion"}"#.utf8))
            let records = stream.messages[..<half].map { HostileRecord(key: $0.key, value: $0.value) } + hostile.map(\.record)
                + [invalid] + after
            try produceHostile(topics.jobs, records)

            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(
                verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(3000))")
            for (jobId, expectation) in stream.expected {
                let copies = try #require(verdicts.verdictsByJob[jobId], "no verdict for \(jobId)\n\(worker.log.suffix(2000))")
                #expect(JSONValue.parse(Array(copies[0].utf8))?["ok"] == .bool(expectation.ok), "\(jobId): \(copies[0])")
            }
            #expect(verdicts.read(seconds: 30) { _ in verdicts.verdictsByJob[invalidJobId] != nil })
            let invalidVerdict = try #require(verdicts.messages.first { $0.headers.first?.value == Array(invalidJobId.utf8) })
            #expect(invalidVerdict.key == Digest.sha256.hash(invalidKey))
            #expect(JSONValue.parse(invalidVerdict.value)?["code"] == .string("job_invalid"))
            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(dead.read(seconds: 60) { $0.count >= hostile.count }, "\(dead.messages.count) of \(hostile.count)\n\(worker.log.suffix(2000))")
            #expect(dead.messages.count == hostile.count)
            for (message, expected) in zip(dead.messages, hostile) {
                #expect((message.key?.count ?? 0) + message.value.count <= OutboundBudget.standard.bytes)
                #expect(message.key == OutboundBudget.key(expected.record.key), "the dead letter is keyed by the bounded key")
                let letter = try #require(JSONValue.parse(message.value))
                #expect(letter["reason"] == .string(expected.reason), "\(letter["message"].map { $0.serialized() } ?? "")")
                if let key = expected.record.key, key.count > DeadLetter.maxInlineKeyBytes {
                    #expect(letter["originalKeyBytes"] == .int(Int64(key.count)))
                    #expect(letter["originalKeySha256"] == .string(Hex.encode(Digest.sha256.hash(key))))
                }
                if let ms = expected.record.timestampMs { #expect(letter["source"]?["timestampMs"] == .int(ms)) }
                if expected.record.headers.count > 0 { #expect(letter["headerCount"] == .int(Int64(expected.record.headers.count))) }
            }
            try validate(dead.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "deadletter")
            #expect(!worker.log.contains("refused"), "nothing was refused by the broker: every message fit")

            // A clean stop within the deadline (not the watchdog), then every offset is committed.
            worker.kill(SIGTERM)
            #expect(worker.wait(seconds: 30), "SIGTERM did not stop the worker")
            #expect(worker.process.terminationStatus == 0, "\(worker.log.suffix(2000))")
            #expect(!worker.log.contains("shutdown deadline passed"))
            var properties = Stack.kafkaProperties
            properties["bootstrap.servers"] = try Stack.brokers
            properties["group.id"] = group
            properties["enable.auto.commit"] = "false"
            let probe = try KafkaConsumer(properties: properties, topics: [topics.jobs], delegate: nil)
            defer { probe.close() }
            let committed = try probe.committed([TopicPartition(topic: topics.jobs, partition: 0)], timeoutMs: 10_000)
            #expect(committed[TopicPartition(topic: topics.jobs, partition: 0)] == .some(Int64(records.count)), "\(committed)")
        }

        /// Dead letters whose inlined bytes reach the producer's limit (a worker configured with a 700,000-byte
        /// message.max.bytes): capped within it with the margin librdkafka's own check needs, so the broker
        /// takes them and none is refused.
        @Test func deadLettersAtTheProducersLimitArePublished() throws {
            let topics = try Stack.topics("edge", partitions: 1)
            let stream = try JobStream(devices: 1, assertions: 1)
            try Jobs.registerApp(stream.bundleId)
            let limit = 700_000
            let properties = [Stack.environment["ATTEST_KAFKA_PROPERTIES"] ?? "", "message.max.bytes=\(limit)"].filter { !$0.isEmpty }
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)",
                extra: ["ATTEST_KAFKA_PROPERTIES": properties.joined(separator: ","), "ATTEST_MAX_MESSAGE_BYTES": "300000"])
            // Values around what the budget leaves once base64-encoded, and one over the job size limit.
            let sizes = [299_000, 300_000, 520_000, 600_000]
            let records = sizes.map { HostileRecord(key: [UInt8](repeating: 3, count: 5_000), value: [0xff] + [UInt8](repeating: 0x41, count: $0 - 1)) }
                + stream.messages.map { HostileRecord(key: $0.key, value: $0.value) }
            try produceHostile(topics.jobs, records)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(3000))")
            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(dead.read(seconds: 60) { $0.count >= sizes.count }, "\(worker.log.suffix(2000))")
            let budget = try #require(OutboundBudget(producerLimit: limit))
            for (message, size) in zip(dead.messages, sizes) {
                #expect((message.key?.count ?? 0) + message.value.count <= budget.bytes)
                let letter = try #require(JSONValue.parse(message.value))
                #expect(letter["reason"] == .string(size > 300_000 ? "too_large" : "job_invalid"))
                #expect(letter["originalBytes"] == .int(Int64(size)) || letter["truncated"] == nil)
            }
            #expect(dead.messages.map(\.value.count).max()! > budget.bytes - 100_000, "the largest dead letter came near the limit")
            #expect(!worker.log.contains("refused"), "\(worker.log.suffix(2000))")
            worker.kill(SIGTERM)
            #expect(worker.wait(seconds: 30) && worker.process.terminationStatus == 0)
        }

        /// A worker whose intake is bounded by bytes (ATTEST_MAX_BUFFERED_BYTES at its minimum, far below a
        /// backlog of large jobs) still decides everything.
        @Test func aSmallByteBoundStillDecidesEveryJob() throws {
            let topics = try Stack.topics("bytes", partitions: 2)
            let stream = try JobStream(devices: 6, assertions: 3)
            try Jobs.registerApp(stream.bundleId)
            // Each job padded to ~200 KB with an unknown member: a 1 MiB bound holds about five.
            let padded = stream.messages.map { message -> HostileRecord in
                var value = message.value
                value.removeLast()
                value += Array(#","pad":""#.utf8) + [UInt8](repeating: 0x61, count: 200_000) + Array(#""}"#.utf8)
                return HostileRecord(key: message.key, value: value)
            }
            try produceHostile(topics.jobs, padded)
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_MAX_BUFFERED_BYTES": "1048576"])
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 120) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(3000))")
            for (jobId, expectation) in stream.expected {
                let copies = try #require(verdicts.verdictsByJob[jobId], "no verdict for \(jobId)")
                #expect(JSONValue.parse(Array(copies[0].utf8))?["ok"] == .bool(expectation.ok), "\(jobId): \(copies[0])")
            }
            worker.kill(SIGTERM)
            #expect(worker.wait(seconds: 30) && worker.process.terminationStatus == 0)
        }
    }
}
