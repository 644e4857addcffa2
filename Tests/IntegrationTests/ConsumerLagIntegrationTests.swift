import AttestCore
import Durations
import Foundation
import PostgresClient
import Testing

extension LiveStack {
    /// The volume metrics of a real worker: the consumer lag per partition, the database time per batch and
    /// the clients' requests to the broker, and that every metric the alert rules name is one the worker exports.
    @Suite struct ConsumerLagIntegrationTests {
        @Test func jobsPublishedWhileTheWorkerWasStoppedAreLagUntilFinishedThenZero() throws {
            let topics = try Stack.topics("lag", partitions: 3)
            let stream = try JobStream(devices: 6, assertions: 3)
            try Jobs.registerApp(stream.bundleId)
            // The worker's batches wait on this lock (their first read is of verdicts): fetched, the jobs stay
            // unfinished, so the lag is exactly what was published for as long as the test holds it.
            let locker = try PGConnection(conninfo: try Stack.databaseURL)
            try locker.execute("BEGIN")
            try locker.execute("LOCK TABLE verdicts IN ACCESS EXCLUSIVE MODE")
            var locked = true
            defer { if locked { _ = try? locker.execute("ROLLBACK") } }
            try produce(topics.jobs, stream.messages)

            let properties = [Stack.environment["ATTEST_KAFKA_PROPERTIES"], "statistics.interval.ms=200"].compactMap { $0 }
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_KAFKA_PROPERTIES": properties.joined(separator: ",")])
            defer { worker.kill(SIGTERM); _ = worker.wait(seconds: 30) }

            let behind = try worker.waitForLag(topic: topics.jobs, partitions: 3, seconds: 60) { $0 == stream.messages.count }
            #expect(behind == stream.messages.count, "\(worker.log.suffix(2000))")
            // The continuous clock, as the worker's timings: a step of the wall clock must not lengthen the hold.
            let heldFrom = ContinuousClock.now
            Thread.sleep(forTimeInterval: 2)
            // Still nothing finished: the lag stays while the jobs are held in the buffer.
            #expect(try worker.lag(topic: topics.jobs).values.reduce(0, +) == stream.messages.count)
            try locker.execute("COMMIT")
            locked = false
            let held = (ContinuousClock.now - heldFrom).timeInterval

            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(2000))")
            let finished = try worker.waitForLag(topic: topics.jobs, partitions: 3, seconds: 30) { $0 == 0 }
            #expect(finished == 0)
            #expect(try worker.lag(topic: topics.jobs).count == 3)

            // The batch that waited on the lock spent that wait in the database.
            let samples = try prometheusSamples(try worker.get("/metrics").body)
            let count = samples.first { $0.name == "attest_batch_database_seconds_count" }?.value ?? 0
            let sum = samples.first { $0.name == "attest_batch_database_seconds_sum" }?.value ?? 0
            let batches = samples.first { $0.name == "attest_batch_seconds_count" }?.value ?? 0
            let batchSum = samples.first { $0.name == "attest_batch_seconds_sum" }?.value ?? 0
            #expect(count >= 1 && count == batches)
            #expect(sum >= held, "database time \(sum) s, lock held \(held) s after the lag showed")
            #expect(sum <= batchSum, "database time \(sum) s is part of the batches' \(batchSum) s")

            // Both clients' requests to the broker, from their statistics: the consumer's fetches, and the
            // producer's produce requests, which carried the verdicts.
            let deadline = Date().addingTimeInterval(10)
            var requests: [String: Double] = [:]
            while Date() < deadline && !(requests["consumer Fetch", default: 0] > 0 && requests["producer Produce", default: 0] > 0) {
                requests = try worker.requests()
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(requests["consumer Fetch", default: 0] > 0 && requests["producer Produce", default: 0] > 0, "\(requests)")
            #expect(requests["consumer Produce"] == nil && requests["producer Fetch"] == nil, "\(requests)")
        }

        @Test func everyMetricTheAlertRulesNameIsOneTheWorkerExports() throws {
            let rules = try String(contentsOf: Stack.repository.appendingPathComponent("ops/prometheus/alerts.yml"), encoding: .utf8)
            // Quoted label values ("attest-worker") are not metric names.
            let unquoted = rules.replacingOccurrences(of: #""[^"\n]*""#, with: #""""#, options: .regularExpression)
            let named = Set(unquoted.matches(of: /\battest_[a-z0-9_]+/).map { String($0.output) })
            try #require(!named.isEmpty)

            // With every optional part that exports series of its own: verdict tokens (their consumption) and
            // the Android status list.
            let (directory, keys) = try TokenConsumeIntegrationTests.keys()
            defer { try? FileManager.default.removeItem(at: directory) }
            let statusList = directory.appendingPathComponent("status.json")
            try Data(#"{"entries":{}}"#.utf8).write(to: statusList)
            let topics = try Stack.topics("lag-names", partitions: 1)
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)",
                extra: ["ATTEST_TOKEN_KEYS": keys[0], "ATTEST_ANDROID_STATUS_LIST_FILE": statusList.path])
            defer { worker.kill(SIGTERM); _ = worker.wait(seconds: 30) }
            #expect(worker.waitFor("/readyz", status: 200, seconds: 60), "\(worker.log.suffix(2000))")
            let families = try worker.exportedFamilies()
            let missing = named.filter { name in
                !families.contains(name)
                    && !["_bucket", "_sum", "_count"].contains { name.hasSuffix($0) && families.contains(String(name.dropLast($0.count))) }
            }
            #expect(missing.isEmpty, "named in ops/prometheus/alerts.yml, not exported by a running worker: \(missing.sorted())")
        }
    }
}

extension WorkerProcess {
    /// `attest_consumer_lag_messages` of `topic` on /metrics, by partition.
    func lag(topic: String) throws -> [String: Int] {
        var lag: [String: Int] = [:]
        for sample in try prometheusSamples(try get("/metrics").body)
        where sample.name == "attest_consumer_lag_messages" && sample.labels["topic"] == topic {
            lag[sample.labels["partition"] ?? ""] = Int(sample.value)
        }
        return lag
    }

    /// `attest_kafka_requests_total` on /metrics, by "client request".
    func requests() throws -> [String: Double] {
        var requests: [String: Double] = [:]
        for sample in try prometheusSamples(try get("/metrics").body) where sample.name == "attest_kafka_requests_total" {
            requests["\(sample.labels["client"] ?? "") \(sample.labels["request"] ?? "")"] = sample.value
        }
        return requests
    }

    /// Polls the lag until all `partitions` report it and their sum satisfies `done`; the last sum seen.
    func waitForLag(topic: String, partitions: Int, seconds: Double, until done: (Int) -> Bool) throws -> Int? {
        let deadline = Date().addingTimeInterval(seconds)
        var last: Int?
        while Date() < deadline {
            let lag = try lag(topic: topic)
            if lag.count == partitions {
                last = lag.values.reduce(0, +)
                if done(last!) { return last }
            }
            Thread.sleep(forTimeInterval: 0.25)
        }
        return last
    }

    /// The metric families /metrics declares (`# TYPE name kind`), whether or not they have series yet.
    func exportedFamilies() throws -> Set<String> {
        Set(try get("/metrics").body.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            return fields.count == 4 && fields[0] == "#" && fields[1] == "TYPE" ? String(fields[2]) : nil
        })
    }
}
