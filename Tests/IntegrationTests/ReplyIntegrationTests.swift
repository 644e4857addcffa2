import AttestClient
import AttestCore
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Synchronization
import Testing

extension LiveStack {
    /// Reply routing, headers and every job answered (issue 12, items 1 to 3) against a running worker: where
    /// each verdict goes, with which headers, whatever happens to its job, and `attest-worker submit`.
    @Suite struct ReplyIntegrationTests {
        static let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

        /// Guarantee: a job naming an allowed reply topic gets its verdict there (on the partition it asked
        /// for, else keyed by keyId) with its jobId, correlation id and trace context, besides the verdicts
        /// topic; a disallowed, reserved or malformed reply-to gets none (logged and counted) while the
        /// verdicts topic still has it; a reply to a partition the topic lacks is skipped (counted) without
        /// holding the jobs after it, as is one to an allowed topic that does not exist (Tansu creates it on
        /// first use); a message too large or not JSON whose jobId can be read is answered on both.
        @Test func repliesGoWhereAllowedWithTheJobsHeadersAndEveryReadableJobIdIsAnswered() throws {
            let topics = try Stack.topics("reply", partitions: 1)
            let replies = topics.jobs.replacingOccurrences(of: ".jobs", with: ".replies")
            try #require(try Stack.ops("topics", "\(replies):3") == 0)
            let bundleId = "com.example.itest.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_REPLY_TOPICS": "\(replies)*, \(topics.verdicts)"])
            let id = String(bundleId.suffix(8))
            let (partitioned, keyed, refused, reserved, malformed, missing, after) = (
                "rp-\(id)", "rk-\(id)", "rn-\(id)", "rr-\(id)", "rm-\(id)", "rx-\(id)", "ra-\(id)")
            let absent = "rs-\(id)"
            func job(_ jobId: String) throws -> (key: [UInt8], value: [UInt8]) {
                let device = try Device()
                return (Array(Base64.encode(device.keyId).utf8), Jobs.attestation(device, bundleId: bundleId, jobId: jobId))
            }
            let keyedJob = try job(keyed)
            let oversize = Array(#"{"jobId":"big-\#(id)","keyId":"k-\#(id)","pad":""#.utf8) + [UInt8](repeating: 0x61, count: 300 * 1024)
                + Array(#""}"#.utf8)
            let broken = Array(#"{"jobId":"broken-\#(id)","kind":"attestation",,}"#.utf8)
            let messages: [HeaderedRecord] = [
                HeaderedRecord(try job(partitioned), [
                    ("reply-to", replies), ("reply-partition", "2"), ("correlation-id", "corr-\(partitioned)"),
                    ("traceparent", Self.traceparent), ("tracestate", "vendor=1"),
                ]),
                HeaderedRecord(keyedJob, [("reply-to", replies), ("correlation-id", "corr-\(keyed)"), ("traceparent", "00-bad")]),
                HeaderedRecord(try job(refused), [("reply-to", "not.allowed.\(id)"), ("correlation-id", "corr-\(refused)")]),
                HeaderedRecord(try job(reserved), [("reply-to", topics.verdicts), ("correlation-id", "corr-\(reserved)")]),
                HeaderedRecord(try job(malformed), [("reply-to", replies), ("reply-partition", "-1")]),
                HeaderedRecord(try job(missing), [("reply-to", replies), ("reply-partition", "9")]),
                HeaderedRecord(try job(absent), [("reply-to", "\(replies)-absent"), ("correlation-id", "corr-\(absent)")]),
                HeaderedRecord(try job(after), [("reply-to", replies), ("correlation-id", "corr-\(after)")]),
                HeaderedRecord((nil, oversize), [("reply-to", replies), ("correlation-id", "corr-big")]),
                HeaderedRecord((nil, broken), [("reply-to", replies), ("correlation-id", "corr-broken")]),
            ]
            try produce(topics.jobs, messages)
            // What is produced: jobs that validate, and the two messages that are no job on purpose.
            try validate(messages.dropLast(2).map { String(decoding: $0.value, as: UTF8.self) }, schema: "job")

            let verdicts = try TopicReader(topic: topics.verdicts)
            let expected = [partitioned, keyed, refused, reserved, malformed, missing, absent, after, "big-\(id)", "broken-\(id)"]
            #expect(
                verdicts.read(seconds: 60) { _ in Set(expected).isSubset(of: verdicts.verdictsByJob.keys) },
                "\(worker.log.suffix(2000))")
            #expect(expected.allSatisfy { verdicts.verdictsByJob[$0]?.count == 1 }, "each job once on the verdicts topic")
            let replyReader = try TopicReader(topic: replies)
            let answered = [partitioned, keyed, after, "big-\(id)", "broken-\(id)"]
            #expect(replyReader.read(seconds: 30) { _ in Set(answered).isSubset(of: replyReader.verdictsByJob.keys) }, "\(worker.log.suffix(2000))")
            Thread.sleep(forTimeInterval: 2)
            _ = replyReader.read(seconds: 1) { _ in false }
            #expect(Set(replyReader.verdictsByJob.keys) == Set(answered), "only allowed, valid reply-tos are answered")

            func header(_ message: KafkaMessage, _ name: String) -> String? {
                message.headers.first { $0.name == name }.map { String(decoding: $0.value, as: UTF8.self) }
            }
            func reply(_ jobId: String) throws -> KafkaMessage {
                try #require(replyReader.messages.first { header($0, "jobId") == jobId })
            }
            let first = try reply(partitioned)
            #expect(first.partition == 2)
            #expect(first.headers.map(\.name) == ["jobId", "correlation-id", "traceparent", "tracestate"])
            #expect(header(first, "correlation-id") == "corr-\(partitioned)" && header(first, "traceparent") == Self.traceparent)
            #expect(header(first, "tracestate") == "vendor=1")
            let onVerdicts = try #require(verdicts.messages.first { header($0, "jobId") == partitioned })
            #expect(onVerdicts.value == first.value && onVerdicts.headers.map(\.name) == first.headers.map(\.name))
            #expect(JSONValue.parse(first.value)?["ok"] == .bool(true))
            let second = try reply(keyed)
            #expect(second.key == keyedJob.key, "keyed by keyId without a partition")
            #expect(second.headers.map(\.name) == ["jobId", "correlation-id"], "a malformed traceparent is not passed on")
            for (jobId, reason) in [("big-\(id)", "message_too_large"), ("broken-\(id)", "malformed_json")] {
                let verdict = try #require(JSONValue.parse(try reply(jobId).value))
                #expect(verdict["code"] == .string("job_invalid") && verdict["reason"] == .string(reason), "\(verdict.serialized())")
            }
            #expect(JSONValue.parse(try reply("big-\(id)").value)?["keyId"] == .string("k-\(id)"))

            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(dead.read(seconds: 20) { $0.count >= 2 })
            #expect(Set(dead.messages.compactMap { header($0, "jobId") }) == ["big-\(id)", "broken-\(id)"])
            let metrics = try worker.get("/metrics").body
            #expect(metrics.contains(#"attest_replies_refused_total{reason="not_allowed"} 2"#), "\(metrics)")
            #expect(metrics.contains(#"attest_replies_refused_total{reason="malformed"} 1"#))
            #expect(metrics.contains(#"attest_replies_refused_total{reason="refused"} 1"#), "the unknown partition")
            #expect(worker.log.contains(#""correlationId":"corr-\#(refused)""#), "the refusal's log line names the job")
            try validate(verdicts.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "verdict")
            try validate(replyReader.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "verdict")
            try validate(dead.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "deadletter")
        }

        /// Guarantee: a job PostgreSQL refuses to store still gets its (unstorable) verdict on its reply topic,
        /// after its dead letter, with its correlation id.
        @Test func aJobWhoseStorageFailsStillGetsAVerdictOnItsReplyTopic() throws {
            let topics = try Stack.topics("replyfail", partitions: 1)
            let replies = topics.jobs.replacingOccurrences(of: ".jobs", with: ".replies")
            try #require(try Stack.ops("topics", "\(replies):1") == 0)
            let id = UUID().uuidString.prefix(8).lowercased()
            let constraint = "itest_reply_refuse_\(id)"
            let admin = try DatabaseFaults.admin()
            try admin.execute("ALTER TABLE verdicts ADD CONSTRAINT \(constraint) CHECK (job_id NOT LIKE 'rrefused-\(id)-%') NOT VALID")
            defer { _ = try? admin.execute("ALTER TABLE verdicts DROP CONSTRAINT \(constraint)") }
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_REPLY_TOPICS": replies])
            let jobId = "rrefused-\(id)-1"
            try produce(topics.jobs, [
                HeaderedRecord((nil, DatabaseFaults.invalidJob(jobId)), [("reply-to", replies), ("correlation-id", "corr-\(id)")]),
            ])
            let replyReader = try TopicReader(topic: replies)
            #expect(replyReader.read(seconds: 60) { !$0.isEmpty }, "\(worker.log.suffix(2000))")
            let message = try #require(replyReader.messages.first)
            let verdict = try #require(JSONValue.parse(message.value))
            #expect(verdict["jobId"] == .string(jobId) && verdict["reason"] == .string("unstorable"), "\(verdict.serialized())")
            #expect(message.headers.map(\.name) == ["jobId", "correlation-id"])
            #expect(message.headers.last?.value == Array("corr-\(id)".utf8))
            #expect(worker.log.contains(#""correlationId":"corr-\#(id)""#), "the unstorable log line names the job")
            try validate([String(decoding: message.value, as: UTF8.self)], schema: "verdict")
            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(dead.read(seconds: 20) { !$0.isEmpty })
            #expect(dead.messages.first?.headers.first { $0.name == "jobId" }?.value == Array(jobId.utf8))
            try validate(dead.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "deadletter")
        }

        /// Guarantee: `attest-worker submit` round-trips a file of valid and rejected jobs through a running
        /// worker (each verdict printed once, exit 1 since some were rejected; 0 when all are accepted), and
        /// exits 2 when no worker answers before its timeout.
        @Test func submitRoundTripsAMixedFileAndTimesOutWithoutAWorker() throws {
            let topics = try Stack.topics("submit", partitions: 3)
            let replies = topics.jobs.replacingOccurrences(of: ".jobs", with: ".replies")
            let bundleId = "com.example.itest.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            let config = FileManager.default.temporaryDirectory.appendingPathComponent("submit-\(UUID().uuidString).conf")
            try "ATTEST_JOBS_TOPIC=\(topics.jobs)\n".write(to: config, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: config) }
            func file(_ lines: [[UInt8]]) throws -> URL {
                let url = FileManager.default.temporaryDirectory.appendingPathComponent("jobs-\(UUID().uuidString).jsonl")
                try Data(lines.flatMap { $0 + [0x0a] }).write(to: url)
                return url
            }
            let id = String(bundleId.suffix(8))
            let valid = try (0..<3).map { n in Jobs.attestation(try Device(), bundleId: bundleId, jobId: "sv-\(id)-\(n)") }
            let rejected = [DatabaseFaults.invalidJob("si-\(id)"), Jobs.attestation(try Device(), bundleId: bundleId + ".unknown", jobId: "su-\(id)")]
            let mixed = try file(valid + rejected)
            let accepted = try file([Jobs.attestation(try Device(), bundleId: bundleId, jobId: "sa-\(id)")])
            defer { for url in [mixed, accepted] { try? FileManager.default.removeItem(at: url) } }
            let submit = ["submit", "--config", config.path, "--reply-topic", replies]
            try validate((valid + [rejected[1]]).map { String(decoding: $0, as: UTF8.self) }, schema: "job")

            let started = Date()
            let lonely = try Stack.run(Stack.binary, submit + [mixed.path, "--timeout", "3"], capture: true)
            #expect(lonely.status == 2, "no worker: \(lonely.output)")
            #expect(lonely.output.isEmpty && Date().timeIntervalSince(started) < 30)

            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_REPLY_TOPICS": "\(replies)*"])
            let round = try Stack.run(Stack.binary, submit + [mixed.path, "--timeout", "90"], capture: true)
            #expect(round.status == 1, "\(round.output)\n\(worker.log.suffix(1500))")
            let lines = round.output.split(separator: "\n").map(String.init)
            let verdicts = lines.compactMap { JSONValue.parse(Array($0.utf8)) }
            let jobIds = verdicts.compactMap { $0["jobId"]?.stringValue }
            #expect(jobIds.count == 5 && Set(jobIds) == Set((0..<3).map { "sv-\(id)-\($0)" } + ["si-\(id)", "su-\(id)"]), "\(lines)")
            for verdict in verdicts {
                let jobId = verdict["jobId"]?.stringValue ?? ""
                #expect(verdict["ok"] == .bool(jobId.hasPrefix("sv-")), "\(verdict.serialized())")
            }
            try validate(lines, schema: "verdict")
            let allAccepted = try Stack.run(Stack.binary, submit + [accepted.path, "--timeout", "60"], capture: true)
            #expect(allAccepted.status == 0, "\(allAccepted.output)")
            #expect(JSONValue.parse(Array(allAccepted.output.utf8.prefix { $0 != 0x0a }))?["jobId"] == .string("sa-\(id)"))
        }

        /// Guarantee: the AttestClient library does the round trip for a Swift backend: `call` publishes a job
        /// and returns its verdict, matched by correlation id, with a deadline.
        @Test func theClientLibraryAwaitsAVerdictAndTimesOutWithoutOne() throws {
            let topics = try Stack.topics("client", partitions: 2)
            let replies = topics.jobs.replacingOccurrences(of: ".jobs", with: ".replies")
            try #require(try Stack.ops("topics", "\(replies):2") == 0)
            let bundleId = "com.example.itest.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            var properties = Stack.kafkaProperties
            properties["bootstrap.servers"] = try Stack.brokers
            let producerProperties = properties.filter { !KafkaProperties.consumerOnly.contains($0.key) }
            let client = try AttestClient(
                producerProperties: producerProperties, consumerProperties: properties, jobsTopic: topics.jobs, replyTopic: replies)
            let job = Jobs.attestation(try Device(), bundleId: bundleId, jobId: "cl-\(bundleId.suffix(8))")
            try validate([String(decoding: job, as: UTF8.self)], schema: "job")
            #expect(throws: AttestClient.Failure.self) { try client.call(job, timeout: .seconds(2)) }
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_REPLY_TOPICS": replies])
            let answer = try client.call(job, timeout: .seconds(60), traceparent: Self.traceparent)
            #expect(answer.ok, "\(String(decoding: answer.value, as: UTF8.self))\n\(worker.log.suffix(1500))")
            #expect(answer.submitted.jobId == "cl-\(bundleId.suffix(8))")
            try validate([String(decoding: answer.value, as: UTF8.self)], schema: "verdict")
            #expect(throws: AttestClient.Failure.self) { try client.publish(Array("[1]".utf8)) }
        }
    }
}

/// A record to produce with Kafka headers.
struct HeaderedRecord {
    var key: [UInt8]?
    var value: [UInt8]
    var headers: [(name: String, value: [UInt8])]

    init(_ record: (key: [UInt8]?, value: [UInt8]), _ headers: [(String, String)]) {
        key = record.key
        value = record.value
        self.headers = headers.map { ($0.0, Array($0.1.utf8)) }
    }
}

/// Produces records with their headers and waits for every acknowledgement (``produce(_:_:)`` sends none).
func produce(_ topic: String, _ records: [HeaderedRecord]) throws {
    var properties = Stack.kafkaProperties.filter { !KafkaProperties.consumerOnly.contains($0.key) }
    properties["bootstrap.servers"] = try Stack.brokers
    let producer = try KafkaProducer(properties: properties)
    let failures = Mutex(0)
    for record in records {
        try producer.produce(topic: topic, key: record.key, value: record.value, headers: record.headers) { result in
            if case .failure = result { failures.withLock { $0 += 1 } }
        }
    }
    try #require(producer.flush(timeoutMs: 30_000))
    producer.close(timeoutMs: 5000)
    try #require(failures.withLock { $0 } == 0)
}
