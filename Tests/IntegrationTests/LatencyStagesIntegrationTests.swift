import Foundation
import Testing

extension LiveStack {
    /// A real worker's `attest_job_stage_seconds`: every job observed once in each of its stages, in the
    /// broker, in the buffer, reading, deciding, storing and publishing (issue 14: the tail is found by
    /// stage), and the stages the split replaced gone.
    @Suite struct LatencyStagesIntegrationTests {
        static let stages = ["broker", "buffer", "reading", "deciding", "storing", "publish"]

        @Test func everyJobIsObservedOnceInEveryStage() throws {
            let topics = try Stack.topics("stages")
            let stream = try JobStream(devices: 6, assertions: 4)
            try Jobs.registerApp(stream.bundleId)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_BATCH_SIZE": "8"])
            try produce(topics.jobs, stream.messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(2000))")

            // The publish stage is observed in the delivery report, which may come after the reader's fetch.
            let jobs = Double(stream.expected.count)
            var counts = [String: Double]()
            var sums = [String: Double]()
            let deadline = Date().addingTimeInterval(10)
            repeat {
                let samples = try prometheusSamples(try worker.get("/metrics").body)
                counts = [:]
                sums = [:]
                for sample in samples {
                    guard let stage = sample.labels["stage"] else { continue }
                    if sample.name == "attest_job_stage_seconds_count" { counts[stage] = sample.value }
                    if sample.name == "attest_job_stage_seconds_sum" { sums[stage] = sample.value }
                }
                if counts["publish"] == jobs { break }
                Thread.sleep(forTimeInterval: 0.2)
            } while Date() < deadline
            #expect(Set(counts.keys) == Set(Self.stages), "\(counts)")
            for stage in Self.stages { #expect(counts[stage] == jobs, "\(stage): \(counts)") }
            // Every batch reads and commits in PostgreSQL: neither stage can be zero over 30 jobs.
            #expect((sums["reading"] ?? 0) > 0, "\(sums)")
            #expect((sums["storing"] ?? 0) > 0, "\(sums)")
            worker.kill(SIGTERM)
            #expect(worker.wait(seconds: 30), "worker did not stop on SIGTERM")
        }
    }
}
