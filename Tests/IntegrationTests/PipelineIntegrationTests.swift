import AttestCore
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Testing

extension LiveStack {
    /// The worker against the real broker and PostgreSQL of `ops/stack` (issue 3's guarantees). Each test uses
    /// its own topics, consumer group and app, so they cannot see each other's messages.
    @Suite struct PipelineIntegrationTests {
        @Test func mixedStreamGetsCorrectVerdictsInKeyOrderAndAPoisonMessageIsDeadLettered() throws {
            let topics = try Stack.topics("mixed")
            var stream = try JobStream(devices: 12, assertions: 6, badSignatureEvery: 4)
            try Jobs.registerApp(stream.bundleId)
            let poison: [UInt8] = Array("not a job \u{1}".utf8)
            stream.messages.insert((nil, poison), at: 3)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_LOG_LEVEL": "debug"])
            try produce(topics.jobs, stream.messages)

            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(2000))")
            let byJob = verdicts.verdictsByJob
            for (jobId, expectation) in stream.expected {
                let copies = try #require(byJob[jobId], "no verdict for \(jobId)")
                #expect(Set(copies).count == 1, "\(jobId) decided differently")
                let verdict = JSONValue.parse(Array(copies[0].utf8))!
                #expect(verdict["ok"] == .bool(expectation.ok), "\(jobId): \(copies[0])")
                if let reason = expectation.reason { #expect(verdict["reason"] == .string(reason)) }
            }
            // Per key, verdicts come out in job order (one key, one partition, published in order).
            for (key, jobIds) in stream.order {
                let keyed = verdicts.messages.filter { $0.key == Array(key.utf8) }
                let seen = keyed.compactMap { m in m.headers.first { $0.name == "jobId" }.map { String(decoding: $0.value, as: UTF8.self) } }
                #expect(seen.filter { jobIds.contains($0) }.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } } == jobIds)
            }
            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(dead.read(seconds: 20) { !$0.isEmpty })
            let letter = try #require(dead.messages.first.flatMap { JSONValue.parse($0.value) })
            #expect(letter["valueBase64"] == .string(Base64.encode(poison)))
            #expect(letter["reason"] == .string("job_invalid"))

            // The HTTP surface: alive, ready, and /metrics counts what was decided.
            #expect(try worker.get("/healthz").status == 200)
            #expect(try worker.get("/readyz").status == 200)
            // /metrics read by Prometheus' own parser: the verdict counters match the verdicts, by reason.
            let samples = try prometheusSamples(try worker.get("/metrics").body)
            let counted = samples.filter { $0.name == "attest_verdicts_total" }
            #expect(counted.map(\.value).reduce(0, +) == Double(stream.expected.count))
            let expectedBad = Double(stream.expected.values.filter { !$0.ok }.count)
            #expect(counted.filter { $0.labels["reason"] == "signature_invalid" }.map(\.value).reduce(0, +) == expectedBad)
            #expect(samples.contains { $0.name == "attest_dead_letters_total" && $0.labels["reason"] == "job_invalid" && $0.value == 1 })
            // Every message taken from the jobs topic is counted under it, the poison one included (each poll
            // adds its messages once per topic).
            #expect(samples.contains {
                $0.name == "attest_jobs_consumed_total" && $0.labels["topic"] == topics.jobs && $0.value == Double(stream.messages.count)
            })

            try validate(verdicts.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "verdict")
            try validate(dead.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "deadletter")
            // The logs, at their most verbose, carry no attestation material: no object, assertion or client data.
            let log = worker.log
            for message in stream.messages {
                guard let job = JSONValue.parse(message.value) else { continue }
                for field in ["attestationObject", "assertion", "clientDataHash"] {
                    if case .string(let value)? = job[field] { #expect(!log.contains(value.prefix(32)), "\(field) of a job in the log") }
                }
            }
            try validate(stream.messages.filter { $0.key != nil }.map { String(decoding: $0.value, as: UTF8.self) }.filter { $0.contains("\"attestation\"") }, schema: "attestation-job")
            try validate(stream.messages.filter { $0.key != nil }.map { String(decoding: $0.value, as: UTF8.self) }.filter { $0.contains("\"assertion\"") }, schema: "assertion-job")
            worker.kill(SIGTERM)
            #expect(worker.wait(seconds: 30), "worker did not stop on SIGTERM")
            #expect(worker.process.terminationStatus == 0)
        }

        @Test func aWorkerKilledMidStreamAndRestartedLeavesEveryJobDecidedOnce() throws {
            let topics = try Stack.topics("kill")
            let stream = try JobStream(devices: 20, assertions: 25)
            try Jobs.registerApp(stream.bundleId)
            let group = "g-\(UUID().uuidString)"
            var worker = try WorkerProcess(topics: topics, group: group, extra: ["ATTEST_BATCH_SIZE": "32"])
            try produce(topics.jobs, stream.messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { $0.count >= stream.expected.count / 3 })
            worker.kill(SIGKILL)  // waits: the killed member's session timeout (6 s on the test broker) before the next joins
            worker.wait(seconds: 10)
            worker = try WorkerProcess(topics: topics, group: group)
            #expect(verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(2000))")
            for (jobId, copies) in verdicts.verdictsByJob where stream.expected[jobId] != nil {
                #expect(Set(copies).count == 1, "\(jobId) published with different verdicts")
                #expect(JSONValue.parse(Array(copies[0].utf8))?["ok"] == .bool(true), "\(jobId): \(copies[0])")
            }
            let connection = try PGConnection(conninfo: try Stack.databaseURL)
            let rows = try connection.execute("SELECT count(*) FROM verdicts WHERE team_id = $1 AND bundle_id = $2", [.text(Jobs.teamId), .text(stream.bundleId)])
            #expect(rows.int(0, 0) == Int64(stream.expected.count))
            let counters = try connection.execute("SELECT min(counter), max(counter) FROM devices WHERE bundle_id = $1", [.text(stream.bundleId)])
            #expect(counters.int(0, 0) == 25 && counters.int(0, 1) == 25, "a counter is not at the last assertion")
        }

        /// A buffer far smaller than the stream, partitions paused as soon as it is full: they are paused and
        /// resumed many times, and the stream still completes. (Resuming once only when a batch was taken
        /// stalled for good when the jobs in flight, not the buffered ones, held the count above half the
        /// limit.)
        @Test func backpressureWithASmallBufferPausesAndResumesWithoutStalling() throws {
            try runThroughASmallBuffer(pauseAfterMilliseconds: 0, expecting: "paused partitions")
        }

        /// The same with the default patience: the poll thread waits for the lanes instead of pausing (which
        /// would discard librdkafka's prefetch), and the stream completes.
        @Test func backpressureWaitsForTheLanesBeforePausing() throws {
            let log = try runThroughASmallBuffer(pauseAfterMilliseconds: 2000, expecting: "buffer full; waiting for the lanes")
            #expect(!log.contains("paused partitions"), "lanes that keep taking batches never stall the poll thread for 2 s")
        }

        /// Returns the worker's log.
        @discardableResult
        private func runThroughASmallBuffer(pauseAfterMilliseconds: Int, expecting line: String) throws -> String {
            let topics = try Stack.topics("backpressure")
            let stream = try JobStream(devices: 12, assertions: 20)
            try Jobs.registerApp(stream.bundleId)
            try produce(topics.jobs, stream.messages)
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)",
                extra: [
                    "ATTEST_MAX_BUFFERED_MESSAGES": "40", "ATTEST_BATCH_SIZE": "40", "ATTEST_LOG_LEVEL": "debug",
                    "ATTEST_PAUSE_AFTER_MS": "\(pauseAfterMilliseconds)",
                ])
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(2000))")
            #expect(worker.log.contains(line), "the buffer never filled: the test did not exercise backpressure")
            return worker.log
        }

        @Test func twoWorkersInOneGroupSharePartitionsAndDecideEachJobOnce() throws {
            let topics = try Stack.topics("two")
            let stream = try JobStream(devices: 40, assertions: 5)
            try Jobs.registerApp(stream.bundleId)
            let group = "g-\(UUID().uuidString)"
            let first = try WorkerProcess(topics: topics, group: group)
            let second = try WorkerProcess(topics: topics, group: group)
            try produce(topics.jobs, stream.messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= stream.expected.count })
            for (_, copies) in verdicts.verdictsByJob { #expect(Set(copies).count == 1) }
            #expect(first.log.contains("partitions assigned") && second.log.contains("partitions assigned"))
            let connection = try PGConnection(conninfo: try Stack.databaseURL)
            let rows = try connection.execute("SELECT count(*) FROM verdicts WHERE bundle_id = $1", [.text(stream.bundleId)])
            #expect(rows.int(0, 0) == Int64(stream.expected.count))
        }

    }
}
