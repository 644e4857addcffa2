import AttestCore
import Foundation
import PostgresClient
import Testing

extension LiveStack.ClusterWide {
    /// The broker and PostgreSQL themselves going away (frozen, stopped): what every client of the stack
    /// sees, so these run alone.
    @Suite struct ServiceOutageTests {
        /// Guarantee: the broker being unreachable delays work but loses none. The worker starts while the
        /// broker is frozen (SIGSTOP: connections hang, as with a partition), stays alive, and decides everything
        /// once the broker thaws; frozen again mid-run, it picks up where it stopped.
        @Test func theBrokerUnavailableAtStartAndMidRunDelaysButLosesNothing() throws {
            let topics = try Stack.topics("broker")
            let stream = try JobStream(devices: 16, assertions: 8)
            try Jobs.registerApp(stream.bundleId)
            let half = stream.messages.count / 2
            try produce(topics.jobs, Array(stream.messages[..<half]))

            try #require(try Stack.ops("kafka-pause") == 0)
            let worker: WorkerProcess
            do {
                defer { _ = try? Stack.ops("kafka-resume") }
                worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
                Thread.sleep(forTimeInterval: 4)  // waits: 4 s with the broker frozen, in which the worker must stay up
                #expect(worker.process.isRunning, "the worker gave up while the broker was away\n\(worker.log.suffix(1500))")
                #expect(try worker.get("/healthz").status == 200)
            }
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= half }, "\(worker.log.suffix(2000))")

            try produce(topics.jobs, Array(stream.messages[half...]))
            try #require(try Stack.ops("kafka-pause") == 0)
            Thread.sleep(forTimeInterval: 3)  // waits: 3 s with the broker frozen mid-run
            try #require(try Stack.ops("kafka-resume") == 0)
            #expect(
                verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(2000))")
            try LiveStack.FaultInjectionTests().expectDecidedOnce(stream, verdicts, assertions: 8, String(worker.log.suffix(1500)))
        }

        @Test func postgresRestartedMidRunLosesNothing() throws {
            let topics = try Stack.topics("pg")
            let stream = try JobStream(devices: 20, assertions: 10)
            try Jobs.registerApp(stream.bundleId)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_BATCH_SIZE": "16"])
            let half = stream.messages.count / 2
            try produce(topics.jobs, Array(stream.messages[..<half]))
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { $0.count >= half / 2 })
            try #require(try Stack.ops("pg-stop") == 0)
            // Readiness follows the database, even while nothing is being written.
            #expect(worker.waitFor("/readyz", status: 503, seconds: 20), "/readyz stayed 200 with PostgreSQL stopped")
            #expect(try worker.get("/healthz").status == 200)
            try produce(topics.jobs, Array(stream.messages[half...]))
            try #require(try Stack.ops("pg-start") == 0)
            #expect(worker.waitFor("/readyz", status: 200, seconds: 30), "/readyz did not return to 200")
            #expect(verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(2000))")
            for (jobId, copies) in verdicts.verdictsByJob where stream.expected[jobId] != nil {
                #expect(Set(copies).count == 1)
                #expect(JSONValue.parse(Array(copies[0].utf8))?["ok"] == .bool(true), "\(jobId): \(copies[0])")
            }
        }
    }
}
