import AttestCore
import AttestJobs
import Foundation
import Testing

/// What `ops/run --demo` shows a newcomer must be true: the stream `attest-bench demo-jobs` mints, fed to a
/// real worker that trusts the roots it wrote, is answered job for job with the outcomes it was minted for.
extension LiveStack {
    @Suite struct DemoJobsIntegrationTests {
        @Test func aWorkerTrustingTheDemoRootsAnswersEachDemoJobAsMinted() throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("demo-jobs-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let bundleId = "com.example.demo.\(UUID().uuidString.prefix(8).lowercased())"
            let bench = URL(fileURLWithPath: Stack.binary).deletingLastPathComponent().appendingPathComponent("attest-bench").path
            try #require(try Stack.run(bench, ["demo-jobs", "--out", directory.path, "--team", Jobs.teamId, "--bundle", bundleId]) == 0)
            let lines = try String(contentsOf: directory.appendingPathComponent("jobs.jsonl"), encoding: .utf8)
                .split(separator: "\n").map { Array($0.utf8) }
            let jobs = try lines.map { line in
                let job = try #require(JSONValue.parse(line))
                return (
                    jobId: try #require(job["jobId"]?.stringValue), keyId: try #require(job["keyId"]?.stringValue),
                    kind: try #require(job["kind"]?.stringValue), line: line)
            }
            #expect(jobs.count == 64, "6 devices of 10 jobs and 4 broken otherwise")
            for kind in ["attestation", "assertion"] {
                try validate(jobs.filter { $0.kind == kind }.map { String(decoding: $0.line, as: UTF8.self) }, schema: "\(kind)-job")
            }

            try Jobs.registerApp(bundleId)
            let topics = try Stack.topics("demojobs")
            let worker = try WorkerProcess(topics: topics, group: "demojobs-\(UUID().uuidString)", extra: [
                "ATTEST_TRUST_ANCHORS": directory.appendingPathComponent("attestation-root.pem").path,
                "ATTEST_RECEIPT_TRUST_ANCHORS": directory.appendingPathComponent("receipt-root.pem").path,
            ])
            defer { worker.kill(SIGTERM); worker.wait(seconds: 20) }
            try produce(topics.jobs, jobs.map { (Array($0.keyId.utf8), $0.line) })

            let reader = try TopicReader(topic: topics.verdicts)
            let ids = Set(jobs.map(\.jobId))
            #expect(reader.read(seconds: 90) { _ in Set(reader.verdictsByJob.keys).isSuperset(of: ids) }, "\(worker.log.suffix(3000))")
            try validate(reader.verdictsByJob.values.flatMap { $0 }, schema: "verdict")
            var outcomes = [String: Int]()
            for (jobId, copies) in reader.verdictsByJob where ids.contains(jobId) {
                let verdict = try #require(JSONValue.parse(Array(copies[0].utf8)))
                outcomes[verdict["ok"] == .bool(true) ? "ok" : verdict["reason"]?.stringValue ?? "?", default: 0] += 1
            }
            // Odd devices break one assertion each (PipelineWorkload: devices 1 and 5 by another key, 3 by a
            // replayed counter); the four others each fail a step of their own.
            #expect(outcomes == [
                "ok": 57, "signature_invalid": 2, "counter_not_increasing": 1, "certificate_chain_invalid": 1,
                "nonce_mismatch": 1, "unknown_key": 1, "unknown_app": 1,
            ])
            #expect(worker.log.contains("trust anchor replaced"), "the worker says loudly that it trusts the test PKI")
        }
    }
}
