import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import Foundation
import Testing

extension LiveStack {
    /// Issue 15 item 2 against a real worker: the jobs a running worker decides and the same jobs given to
    /// `attest-worker verify` (with the stored device each assertion line carries) get the same verdicts, up to
    /// what each derives from its own clock reading and store (verifiedAt, deviceIntelligence), because both run
    /// one check list; a step one of them skips or reorders fails here.
    @Suite struct CheckListParityIntegrationTests {
        @Test func theWorkerAndVerifyAgreeOnValidAndBrokenJobs() throws {
            let topics = try Stack.topics("parity", partitions: 1)
            let bundleId = "com.example.parity.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            let device = try Device()
            let other = try Device()
            let now = Date()
            let key = Base64.encode(device.keyId)
            // (jobId, the job, what the offline line adds: the device as the worker has it when the job is decided)
            var jobs = [(jobId: String, value: [UInt8], stored: UInt32?)]()
            func add(_ name: String, _ value: [UInt8], stored: UInt32? = nil) { jobs.append(("\(name)-\(bundleId)", value, stored)) }
            func id(_ name: String) -> String { "\(name)-\(bundleId)" }
            add("att-ok", Jobs.attestation(device, bundleId: bundleId, jobId: id("att-ok"), receivedAt: now))
            add("att-future", Jobs.attestation(try Device(), bundleId: bundleId, jobId: id("att-future"), receivedAt: now.addingTimeInterval(600)))
            add("att-old", Jobs.attestation(try Device(), bundleId: bundleId, jobId: id("att-old"), receivedAt: now.addingTimeInterval(-3 * 86_400)))
            add("att-nonce", Jobs.attestation(
                try Device(), bundleId: bundleId, jobId: id("att-nonce"), receivedAt: now,
                options: AttestationOptions(nonce: .value(Array(repeating: 7, count: 32)))))
            add("att-rp-id", Jobs.attestation(
                try Device(), bundleId: bundleId, jobId: id("att-rp-id"), receivedAt: now,
                options: AttestationOptions(rpIdAppId: "OTHERTEAM1.com.example.other")))
            add("att-counter", Jobs.attestation(
                try Device(), bundleId: bundleId, jobId: id("att-counter"), receivedAt: now, options: AttestationOptions(counter: 1)))
            add("att-no-receipt", Jobs.attestation(
                try Device(), bundleId: bundleId, jobId: id("att-no-receipt"), receivedAt: now, options: AttestationOptions(receipt: .absent)))
            add("asr-ok", Jobs.assertion(device, bundleId: bundleId, jobId: id("asr-ok"), counter: 1, receivedAt: now), stored: 0)
            add("asr-replay", Jobs.assertion(device, bundleId: bundleId, jobId: id("asr-replay"), counter: 1, receivedAt: now), stored: 1)
            add("asr-signer", Jobs.assertion(device, bundleId: bundleId, jobId: id("asr-signer"), counter: 2, signer: other, receivedAt: now), stored: 1)
            add("asr-future", Jobs.assertion(device, bundleId: bundleId, jobId: id("asr-future"), counter: 3, receivedAt: now.addingTimeInterval(600)), stored: 1)
            add("asr-unknown", Jobs.assertion(other, bundleId: bundleId, jobId: id("asr-unknown"), counter: 1, receivedAt: now))
            add("asr-next", Jobs.assertion(device, bundleId: bundleId, jobId: id("asr-next"), counter: 4, receivedAt: now), stored: 1)

            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            // One partition, keyed by keyId: each key's jobs are decided in the order above.
            try produce(topics.jobs, jobs.map { job in
                let json = JSONValue.parse(job.value)
                return (Array((json?["keyId"]?.stringValue ?? key).utf8), job.value)
            })
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob.count >= jobs.count }, "\(worker.log.suffix(2000))")

            let lines = jobs.map { job -> String in
                guard let stored = job.stored, case .object(let members)? = JSONValue.parse(job.value) else {
                    return String(decoding: job.value, as: UTF8.self)
                }
                return JSONValue.object(
                    members + [("publicKey", .string(Base64.encode(device.publicKeyX962))), ("previousCounter", .int(Int64(stored)))]
                ).serialized()
            }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("parity-\(UUID().uuidString).jsonl")
            defer { try? FileManager.default.removeItem(at: file) }
            try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
            let run = try Stack.run(
                Stack.binary,
                ["verify", file.path, "--environment", "any", "--trust-anchor", Jobs.anchorFiles.attestation,
                    "--receipt-trust-anchor", Jobs.anchorFiles.receipt],
                capture: true)
            try #require(run.status == 0)
            let offline = run.output.split(separator: "\n").map { JSONValue.parse(Array($0.utf8)) }
            try #require(offline.count == jobs.count)

            /// What both paths must agree on: everything but their own clock reading and store.
            func comparable(_ verdict: JSONValue?) -> [(String, JSONValue)] {
                guard case .object(let members)? = verdict else { return [] }
                return members.filter { !["deviceIntelligence", "verifiedAt"].contains($0.0) }
            }
            var reasons = Set<String>()
            for (job, verdict) in zip(jobs, offline) {
                let published = verdicts.verdictsByJob[job.jobId]?.first.flatMap { JSONValue.parse(Array($0.utf8)) }
                let (w, o) = (comparable(published), comparable(verdict))
                #expect(w.map(\.0) == o.map(\.0), "\(job.jobId): members")
                for ((name, a), (_, b)) in zip(w, o) { #expect(a == b, "\(job.jobId): \(name) \(a.serialized()) vs \(b.serialized())") }
                reasons.insert(published?["reason"]?.stringValue ?? "ok")
            }
            // Accepted jobs and a distinct reason for each broken step.
            #expect(reasons.count == 9, "\(reasons.sorted())")
        }
    }
}
