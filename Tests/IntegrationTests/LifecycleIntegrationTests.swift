import AttestCore
import AttestJobs
import Durations
import Foundation
import PostgresClient
import Testing

extension LiveStack {
    /// The worker's components run as one group (issue 15): started in a fixed order, stopped in the
    /// reverse one, a failing component ending the process non-zero, the shutdown bounded by
    /// ATTEST_SHUTDOWN_TIMEOUT.
    @Suite struct LifecycleIntegrationTests {
        static let startOrder = [
            "product", "ops", "schema", "database probe", "challenge purger", "partition maintenance", "event publisher", "producer",
            "consumer", "lanes", "poll",
        ]

        /// SIGTERM after a stream: every component stops, in the reverse of the start order, each only after
        /// the previous one's stop returned, and the process exits 0.
        @Test func sigtermStopsTheComponentsInReverseOrder() throws {
            let topics = try Stack.topics("life", partitions: 2)
            let stream = try JobStream(devices: 3, assertions: 2)
            try Jobs.registerApp(stream.bundleId)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_LOG_LEVEL": "debug"])
            #expect(worker.waitFor("/readyz", status: 200, seconds: 30), "\(worker.log.suffix(1500))")
            try produce(topics.jobs, stream.messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(2000))")

            worker.kill(SIGTERM)
            #expect(worker.wait(seconds: 30), "SIGTERM did not stop the worker")
            #expect(worker.process.terminationStatus == 0, "\(worker.log.suffix(2000))")
            let events = worker.componentEvents()
            #expect(events.filter { $0.event == "started" }.map(\.component) == Self.startOrder, "\(events)")
            let stops = events.filter { $0.event != "started" }
            #expect(stops.map { "\($0.event) \($0.component)" } == Self.startOrder.reversed().flatMap { ["stopping \($0)", "stopped \($0)"] })
            #expect(worker.log.contains("\"worker stopped\""))
        }

        /// A listener that cannot bind (the broker's own port) ends the start: nothing after it starts, the
        /// listener started before it is stopped, and the process exits 2 with a line naming it.
        @Test func aComponentThatCannotStartStopsTheOthersAndExits2() throws {
            let topics = try Stack.topics("life-bind", partitions: 1)
            let taken = try Stack.brokers.split(separator: ",")[0]
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_LOG_LEVEL": "debug", "ATTEST_OPS_HTTP_ADDRESS": String(taken)])
            #expect(worker.wait(seconds: 30), "the worker kept running without its operations listener")
            #expect(worker.process.terminationStatus == 2, "a failed start is an environment error")
            #expect(worker.log.contains("attest-worker: ops failed: HTTP server on \(taken)"), "\(worker.log.suffix(2000))")
            let failure = worker.logLines.first { $0["msg"] == .string("component failed; stopping") }
            #expect(failure?["component"] == .string("ops"), "\(worker.log.suffix(2000))")
            let events = worker.componentEvents()
            #expect(events.map { "\($0.event) \($0.component)" } == ["started product", "stopping product", "stopped product"], "\(events)")
            #expect(!worker.log.contains("\"worker started\""))
        }

        /// A lane that cannot finish its batch (its insert waits for a row a test session holds) keeps the
        /// shutdown past ATTEST_SHUTDOWN_TIMEOUT: the process exits non-zero at the deadline, saying which
        /// component held it, without committing the job, and the next worker decides it once.
        @Test func aShutdownPastItsDeadlineExitsNonZeroAndTheJobIsRedelivered() throws {
            let topics = try Stack.topics("life-deadline", partitions: 1)
            let group = "g-\(UUID().uuidString)"
            // waits: the 2 s shutdown deadline it checks, then the next worker's group join
            let worker = try WorkerProcess(topics: topics, group: group, extra: ["ATTEST_SHUTDOWN_TIMEOUT": "2"])
            #expect(worker.waitFor("/readyz", status: 200, seconds: 30), "\(worker.log.suffix(1500))")
            let jobId = "life-\(UUID().uuidString.prefix(8).lowercased())"
            let admin = try DatabaseFaults.admin()
            do {
                defer { _ = try? admin.execute("ROLLBACK") }
                try admin.execute("BEGIN")
                try DatabaseFaults.holdVerdict(jobId, admin)
                try produce(topics.jobs, [(nil, DatabaseFaults.invalidJob(jobId))])
                #expect(try DatabaseFaults.waitForWorkerLockWait(admin, seconds: 30), "\(worker.log.suffix(2000))")
                let asked = ContinuousClock.now
                worker.kill(SIGTERM)
                #expect(worker.wait(seconds: 15), "the worker outlived its shutdown deadline")
                let took = (ContinuousClock.now - asked).timeInterval
                #expect(took >= 1.9 && took < 10, "\(took) s")
                #expect(worker.process.terminationStatus != 0)
                let line = worker.logLines.first { $0["msg"] == .string("shutdown deadline passed; exiting") }
                #expect(line?["component"] == .string("lanes"), "\(worker.log.suffix(2000))")
            }
            let next = try WorkerProcess(topics: topics, group: group)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob[jobId] != nil }, "\(next.log.suffix(2000))")
            #expect(verdicts.verdictsByJob[jobId]?.count == 1)
        }
    }
}

extension WorkerProcess {
    /// The log's JSON lines.
    var logLines: [JSONValue] { log.split(separator: "\n").compactMap { JSONValue.parse(Array($0.utf8)) } }

    /// The group's component events (debug lines "started", "stopping", "stopped"), in log order.
    func componentEvents() -> [(event: String, component: String)] {
        logLines.compactMap { line in
            guard case .string(let message)? = line["msg"], ["started", "stopping", "stopped"].contains(message),
                case .string(let component)? = line["component"]
            else { return nil }
            return (message, component)
        }
    }
}
