import AttestCore
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Testing

extension LiveStack {
    /// Faults injected into the real stack (issue 6). Each test names the guarantee it checks; together with
    /// PipelineIntegrationTests (one SIGKILL, a poison message) and the cluster-wide ones (ServiceOutageTests:
    /// the broker frozen, PostgreSQL restarted) they cover the failure modes a deployment meets.
    @Suite struct FaultInjectionTests {
        /// Every job of `stream` has exactly one distinct verdict with its expected outcome, one row per job is
        /// stored, and every device's counter is at its last accepted assertion.
        func expectDecidedOnce(_ stream: JobStream, _ verdicts: TopicReader, assertions: Int, _ context: String) throws {
            let byJob = verdicts.verdictsByJob
            for (jobId, expectation) in stream.expected {
                let copies = try #require(byJob[jobId], "no verdict for \(jobId)\n\(context)")
                #expect(Set(copies).count == 1, "\(jobId) published with different verdicts")
                #expect(JSONValue.parse(Array(copies[0].utf8))?["ok"] == .bool(expectation.ok), "\(jobId): \(copies[0])")
            }
            let connection = try PGConnection(conninfo: try Stack.databaseURL)
            let rows = try connection.execute("SELECT count(*) FROM verdicts WHERE bundle_id = $1", [.text(stream.bundleId)])
            #expect(rows.int(0, 0) == Int64(stream.expected.count), "one stored verdict per job")
            if assertions > 0 {
                // Android keys have no counter: their requests' freshness is their challenge.
                let counters = try connection.execute(
                    "SELECT min(counter), max(counter), count(*) FROM devices WHERE bundle_id = $1 AND environment <> 'android'",
                    [.text(stream.bundleId)])
                #expect(counters.int(0, 0) == Int64(assertions) && counters.int(0, 1) == Int64(assertions), "counters at the last assertion")
                #expect(counters.int(0, 2) == Int64(stream.devices.count))
                let android = try connection.execute(
                    "SELECT count(*) FROM devices WHERE bundle_id = $1 AND environment = 'android'", [.text(stream.bundleId)])
                #expect(android.int(0, 0) == Int64(stream.androidDevices.count))
            }
        }

        /// Guarantee: nothing lost, nothing decided twice, no offset past unstored work. A worker killed with
        /// SIGKILL four times during a long stream of both platforms' jobs leaves every job with one verdict and
        /// one row: had an offset moved past a job whose verdict was not stored and acknowledged, that job
        /// would never be decided.
        @Test func aWorkerKilledRepeatedlyDuringALongStreamLosesNothing() throws {
            let topics = try Stack.topics("killloop")
            let stream = try JobStream(devices: 30, assertions: 30, androidDevices: 10)
            try Jobs.registerApp(stream.bundleId, policy: stream.androidRegistration)
            let group = "g-\(UUID().uuidString)"
            try produce(topics.jobs, stream.messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            var logs = ""
            for round in 1...4 {
                let worker = try WorkerProcess(topics: topics, group: group, extra: ["ATTEST_BATCH_SIZE": "24"])
                let target = stream.expected.count * round / 6
                #expect(verdicts.read(seconds: 60) { $0.count >= target }, "round \(round)\n\(worker.log.suffix(1500))")
                worker.kill(SIGKILL)  // waits: each kill, the killed member's session timeout (6 s on the test broker)
                worker.wait(seconds: 10)
                logs += String(worker.log.suffix(500))
            }
            let last = try WorkerProcess(topics: topics, group: group)
            #expect(verdicts.read(seconds: 120) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(last.log.suffix(2000))")
            try expectDecidedOnce(stream, verdicts, assertions: 30, logs + String(last.log.suffix(1500)))
        }

        /// Guarantee: nothing is dropped silently and one bad message never stops a partition. Oversize
        /// messages, non-UTF-8 bytes, empty messages, JSON that is not an object and a job without a jobId go
        /// to the dead-letter topic with their bytes; a job with unusable fields gets a job_invalid verdict; the
        /// valid jobs around them in the same partition are all decided.
        @Test func poisonAndOversizeMessagesAreDeadLetteredAndThePartitionFlows() throws {
            let topics = try Stack.topics("poison", partitions: 1)
            let stream = try JobStream(devices: 4, assertions: 3)
            try Jobs.registerApp(stream.bundleId)
            let oversize = Array(#"{"jobId":"big","pad":""#.utf8) + [UInt8](repeating: 0x61, count: 300 * 1024) + Array(#""}"#.utf8)
            let poison: [(bytes: [UInt8], reason: String)] = [
                (oversize, "too_large"), ([0xff, 0xfe, 0x00, 0x7b], "job_invalid"), ([], "job_invalid"),
                (Array("[1,2,3]".utf8), "job_invalid"), (Array(#"{"kind":"attestation"}"#.utf8), "job_invalid"),
            ]
            let invalidJob = Array(#"{"jobId":"bad-fields-\#(stream.bundleId)","kind":"assertion","teamId":7}"#.utf8)
            var messages = stream.messages
            for (n, message) in poison.enumerated() { messages.insert((nil, message.bytes), at: 1 + n * 4) }
            messages.insert((nil, invalidJob), at: 6)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            try produce(topics.jobs, messages)

            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(
                verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob.count >= stream.expected.count + 1 }, "\(worker.log.suffix(2000))")
            try expectDecidedOnce(stream, verdicts, assertions: 3, String(worker.log.suffix(1500)))
            let invalid = try #require(verdicts.verdictsByJob["bad-fields-\(stream.bundleId)"]?.first.flatMap { JSONValue.parse(Array($0.utf8)) })
            #expect(invalid["code"] == .string("job_invalid"))

            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(dead.read(seconds: 30) { $0.count >= poison.count })
            let letters = dead.messages.compactMap { JSONValue.parse($0.value) }
            #expect(letters.count == poison.count)
            for (letter, expected) in zip(letters, poison) {
                #expect(letter["reason"] == .string(expected.reason))
                if expected.bytes.count <= 512 * 1024 { #expect(letter["valueBase64"] == .string(Base64.encode(expected.bytes))) }
            }
            try validate(dead.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "deadletter")
        }

        /// Guarantee: a jobId is decided once. The same jobId sent again with different content (another
        /// device's valid attestation) is never answered with the first job's verdict: it gets a
        /// job_invalid/job_id_reused rejection of its own, nothing of the second job is stored, and the reuse is
        /// reported (a warning naming the jobId and where the message was).
        @Test func theSameJobIdWithDifferentContentKeepsTheFirstDecision() throws {
            let topics = try Stack.topics("dupid", partitions: 1)
            let bundleId = "com.example.itest.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            let (first, second) = (try Device(), try Device())
            let jobId = "dup-\(bundleId)"
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            try produce(topics.jobs, [(Array(Base64.encode(first.keyId).utf8), Jobs.attestation(first, bundleId: bundleId, jobId: jobId))])
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { !$0.isEmpty }, "\(worker.log.suffix(1500))")
            try produce(topics.jobs, [(Array(Base64.encode(second.keyId).utf8), Jobs.attestation(second, bundleId: bundleId, jobId: jobId))])
            #expect(verdicts.read(seconds: 60) { $0.count >= 2 }, "\(worker.log.suffix(1500))")
            let copies = try #require(verdicts.verdictsByJob[jobId])
            #expect(copies.count == 2, "\(copies)")
            let (decided, reused) = (JSONValue.parse(Array(copies[0].utf8)), JSONValue.parse(Array(copies[1].utf8)))
            #expect(decided?["keyId"] == .string(Base64.encode(first.keyId)) && decided?["ok"] == .bool(true))
            #expect(reused?["keyId"] == .string(Base64.encode(second.keyId)) && reused?["ok"] == .bool(false))
            #expect(reused?["code"] == .string("job_invalid") && reused?["reason"] == .string("job_id_reused"))
            #expect(worker.log.contains("jobId reused with other content"), "the reuse was not reported")
            let connection = try PGConnection(conninfo: try Stack.databaseURL)
            let devices = try connection.execute("SELECT count(*) FROM devices WHERE bundle_id = $1", [.text(bundleId)])
            #expect(devices.int(0, 0) == 1, "the second device was stored")
        }

        /// Guarantee: verdicts depend on when the backend received the job, not on the worker's clock or the
        /// queue's lag. A leaf that expired an hour ago is accepted for a job received while it was valid; a
        /// job stamped within the future skew is accepted; one beyond it, or older than the maximum age, is
        /// rejected as received_at_out_of_range whatever its content.
        @Test func skewedClocksAndQueueLagDecideByReceivedAt() throws {
            let topics = try Stack.topics("clock", partitions: 1)
            let bundleId = "com.example.itest.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            let now = Date()
            let hour: TimeInterval = 3600
            // Leaf valid from 3 days + 1 hour ago until 1 hour ago; the job was received 2 hours ago.
            let lagged = AttestationOptions(leafNotBefore: now - 3 * 24 * hour - hour, leafNotAfter: now - hour)
            let cases: [(jobId: String, receivedAt: Date, options: AttestationOptions, reason: String?)] = [
                ("lagged", now - 2 * hour, lagged, nil),
                ("ahead-within-skew", now + 30, AttestationOptions(), nil),
                ("ahead-beyond-skew", now + 600, AttestationOptions(), "received_at_out_of_range"),
                ("too-old", now - 25 * hour, AttestationOptions(), "received_at_out_of_range"),
            ]
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            try produce(
                topics.jobs,
                try cases.map { c in
                    let device = try Device()
                    return (
                        Array(Base64.encode(device.keyId).utf8),
                        Jobs.attestation(device, bundleId: bundleId, jobId: "\(c.jobId)-\(bundleId)", receivedAt: c.receivedAt, options: c.options)
                    )
                })
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { $0.count >= cases.count }, "\(worker.log.suffix(1500))")
            for c in cases {
                let verdict = try #require(verdicts.verdictsByJob["\(c.jobId)-\(bundleId)"]?.first.flatMap { JSONValue.parse(Array($0.utf8)) })
                #expect(verdict["ok"] == .bool(c.reason == nil), "\(c.jobId): \(verdict.serialized())")
                if let reason = c.reason { #expect(verdict["reason"] == .string(reason), "\(c.jobId)") }
            }
        }
    }
}
