import AttestCore
import AttestJobs
import AttestMint
import Foundation
import Testing

/// examples/python/round_trip.py against a real worker: what docs/BACKEND.md tells a Python backend to do
/// must work as written, with the client library a backend would use (confluent-kafka, not this project's).
extension LiveStack {
    @Suite struct PythonExampleIntegrationTests {
        /// The example's interpreter: EXAMPLE_PYTHON (ops/test sets it from examples/python/install),
        /// else the virtual environment that script makes in the default cache folder.
        static var python: String {
            get throws {
                let cache = Stack.environment["ATTEST_CACHE_DIR"]
                    ?? (Stack.environment["XDG_CACHE_HOME"] ?? NSHomeDirectory() + "/.cache") + "/attest-worker"
                let path = Stack.environment["EXAMPLE_PYTHON"] ?? cache + "/python-example/bin/python"
                try #require(FileManager.default.isExecutableFile(atPath: path), "no \(path): run examples/python/install (ops/test does)")
                return path
            }
        }

        /// Runs the example on `jobs` (JSON lines) and returns its exit status, stdout and stderr.
        static func roundTrip(_ jobs: [[UInt8]], jobsTopic: String, replyTopic: String, timeout: Int, traceparent: String? = nil) throws
            -> (status: Int32, stdout: String, stderr: String)
        {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pyexample-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let input = directory.appendingPathComponent("jobs.jsonl")
            try Data(jobs.flatMap { $0 + [0x0a] }).write(to: input)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try python)
            process.arguments = [
                Stack.repository.appendingPathComponent("examples/python/round_trip.py").path, "--brokers", try Stack.brokers,
                "--jobs-topic", jobsTopic, "--reply-topic", replyTopic, "--timeout", "\(timeout)", input.path,
            ] + (traceparent.map { ["--traceparent", $0] } ?? [])
            let out = directory.appendingPathComponent("stdout"), err = directory.appendingPathComponent("stderr")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            _ = FileManager.default.createFile(atPath: err.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = try FileHandle(forWritingTo: err)
            try process.run()
            process.waitUntilExit()
            return (process.terminationStatus, try String(contentsOf: out, encoding: .utf8), try String(contentsOf: err, encoding: .utf8))
        }

        /// A device's attestation and assertion, then an assertion signed by another key: what the example
        /// prints is each verdict with its jobId, and it exits 1 because one was rejected.
        @Test func theExamplePrintsEachVerdictFromItsReplyTopic() throws {
            let topics = try Stack.topics("pyexample")
            let replyTopic = "\(topics.jobs).replies"
            let device = try Device(), stranger = try Device()
            let bundleId = "com.example.pyexample.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            let worker = try WorkerProcess(
                topics: topics, group: "pyexample-\(UUID().uuidString)", extra: ["ATTEST_REPLY_TOPICS": "\(topics.jobs).*"])
            defer { worker.kill(SIGTERM); worker.wait(seconds: 20) }
            let ids = ["py-att-\(bundleId)", "py-asr-\(bundleId)-1", "py-asr-\(bundleId)-2"]
            let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

            let run = try Self.roundTrip([
                Jobs.attestation(device, bundleId: bundleId, jobId: ids[0]),
                Jobs.assertion(device, bundleId: bundleId, jobId: ids[1], counter: 1),
                Jobs.assertion(device, bundleId: bundleId, jobId: ids[2], counter: 2, signer: stranger),
            ], jobsTopic: topics.jobs, replyTopic: replyTopic, timeout: 90, traceparent: traceparent)

            #expect(run.status == 1, "exit \(run.status): \(run.stderr)\n\(worker.log.suffix(2000))")
            let lines = run.stdout.split(separator: "\n").map(String.init)
            let verdicts = lines.compactMap { JSONValue.parse(Array($0.utf8)) }
            try #require(verdicts.count == 3, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
            let byJob = Dictionary(uniqueKeysWithValues: verdicts.map { ($0["jobId"]?.stringValue ?? "", $0) })
            #expect(byJob[ids[0]]?["ok"] == .bool(true))
            #expect(byJob[ids[1]]?["ok"] == .bool(true))
            #expect(byJob[ids[2]]?["ok"] == .bool(false))
            #expect(byJob[ids[2]]?["reason"] == .string("signature_invalid"))
            try validate(lines, schema: "verdict")
            // The reply carried the job's own traceparent back (the example flags one that changed).
            let replies = run.stderr.split(separator: "\n").filter { $0.contains("correlation-id") }
            #expect(replies.count == 3 && replies.allSatisfy { $0.contains(traceparent) && !$0.contains("CHANGED") }, "\(run.stderr)")
            #expect(run.stderr.contains("3 answered, 2 accepted, 1 rejected"))

            // The verdicts topic has every verdict as well: the reply is a copy, not a diversion.
            let reader = try TopicReader(topic: topics.verdicts)
            #expect(reader.read(seconds: 30) { _ in Set(reader.verdictsByJob.keys).isSuperset(of: ids) })
        }

        /// A reply topic the worker does not allow gets no reply: the example keeps to its deadline, exits 2
        /// and names the job, while the verdict is on the verdicts topic as always.
        @Test func aReplyTopicTheWorkerDoesNotAllowEndsAtTheDeadline() throws {
            let topics = try Stack.topics("pyexample")
            let device = try Device()
            let bundleId = "com.example.pyexample.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            let worker = try WorkerProcess(
                topics: topics, group: "pyexample-\(UUID().uuidString)", extra: ["ATTEST_REPLY_TOPICS": "\(topics.jobs).allowed"])
            defer { worker.kill(SIGTERM); worker.wait(seconds: 20) }
            let jobId = "py-att-\(bundleId)"

            let started = Date()
            let run = try Self.roundTrip(
                [Jobs.attestation(device, bundleId: bundleId, jobId: jobId)], jobsTopic: topics.jobs,
                replyTopic: "\(topics.jobs).other", timeout: 5)

            #expect(run.status == 2, "exit \(run.status): \(run.stderr)")
            #expect(run.stdout.isEmpty)
            #expect(run.stderr.contains("no verdict within 5 s for: \(jobId)"), "\(run.stderr)")
            #expect(Date().timeIntervalSince(started) < 60, "the deadline held")
            let reader = try TopicReader(topic: topics.verdicts)
            #expect(reader.read(seconds: 30) { _ in reader.verdictsByJob[jobId] != nil }, "\(worker.log.suffix(2000))")
        }
    }
}
