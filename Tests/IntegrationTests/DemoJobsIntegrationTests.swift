import AttestCore
import AttestJobs
import AttestVerifier
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
            let package = AndroidJobs.package()
            let bench = URL(fileURLWithPath: Stack.binary).deletingLastPathComponent().appendingPathComponent("attest-bench").path
            try #require(try Stack.run(bench, [
                "demo-jobs", "--out", directory.path, "--team", Jobs.teamId, "--bundle", bundleId, "--android-package", package,
            ]) == 0)
            // The app's package and signing digest, for `app add`.
            let androidApp = try String(contentsOf: directory.appendingPathComponent("android-app.txt"), encoding: .utf8)
                .split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            try #require(androidApp.count == 2 && androidApp[0] == package, "\(androidApp)")
            let lines = try String(contentsOf: directory.appendingPathComponent("jobs.jsonl"), encoding: .utf8)
                .split(separator: "\n").map { Array($0.utf8) }
            let jobs = try lines.map { line in
                let job = try #require(JSONValue.parse(line))
                let kind = try #require(job["kind"]?.stringValue)
                // An Android key attestation names no keyId: keyed by its leaf's, as `submit` keys it, so that a
                // key's requests follow its attestation on one partition.
                var keyId = job["keyId"]?.stringValue
                if kind == "android_attestation", case .success(let android) = AndroidJob.parse(job),
                    case .attestation(let request) = android.payload, let leaf = request.leafKeyId
                {
                    keyId = Base64.encode(leaf)
                }
                return (jobId: try #require(job["jobId"]?.stringValue), keyId: try #require(keyId), kind: kind, line: line)
            }
            #expect(jobs.count == 96, "6 Apple and 3 Android devices of 10 jobs, 6 broken otherwise")
            #expect(jobs.count { $0.kind.hasPrefix("android_") } == 32)
            for kind in ["attestation", "assertion", "android_attestation", "android_assertion"] {
                try validate(
                    jobs.filter { $0.kind == kind }.map { String(decoding: $0.line, as: UTF8.self) },
                    schema: "\(kind.replacingOccurrences(of: "_", with: "-"))-job")
            }

            try Jobs.registerApp(bundleId, policy: ["--android-package", androidApp[0], "--android-signing-digests", androidApp[1]])
            let topics = try Stack.topics("demojobs")
            let worker = try WorkerProcess(topics: topics, group: "demojobs-\(UUID().uuidString)", extra: [
                "ATTEST_TRUST_ANCHORS": directory.appendingPathComponent("attestation-root.pem").path,
                "ATTEST_RECEIPT_TRUST_ANCHORS": directory.appendingPathComponent("receipt-root.pem").path,
                "ATTEST_ANDROID_TRUST_ANCHORS": directory.appendingPathComponent("android-root.pem").path,
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
            // Odd devices break one assertion each (PipelineWorkload: Apple devices 1 and 5 by another key, 3
            // by a replayed counter; Android device 1 by another key); the six others each fail a step of
            // their own (an Apple and an Android key never attested: unknown_key twice).
            #expect(outcomes == [
                "ok": 86, "signature_invalid": 3, "counter_not_increasing": 1, "certificate_chain_invalid": 1,
                "nonce_mismatch": 1, "unknown_key": 2, "unknown_app": 1, "untrusted_root": 1,
            ])
            for job in jobs where job.kind.hasPrefix("android_") {
                let verdict = try #require(JSONValue.parse(Array((reader.verdictsByJob[job.jobId]?.first ?? "").utf8)))
                #expect(verdict["kind"] == .string(job.kind) && verdict["packageName"] == .string(package), "\(verdict)")
            }
            #expect(worker.log.contains("trust anchor replaced"), "the worker says loudly that it trusts the test PKI")
        }
    }
}
