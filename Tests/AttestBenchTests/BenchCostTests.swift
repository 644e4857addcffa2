import Foundation
import KafkaClient
import Testing

@testable import attest_bench

/// /proc/<pid>/stat parsing and the per-process-tree CPU sum of the benchmark's cost per job.
@Suite struct ProcessCPUTests {
    /// A postgres backend's line as the kernel writes it (fields 14–17: utime stime cutime cstime).
    static let line =
        "4242 (postgres) S 4100 4100 4100 0 -1 4194560 1200 0 3 0 731 245 17 9 20 0 1 0 98765 221184000 5000 "
        + "18446744073709551615 1 1 0 0 0 0 4194304 19935232 84487 0 0 0 17 1 0 0 0 0 0"

    @Test func readsParentAndTimes() {
        #expect(ProcessCPU.parse(Self.line) == ProcessCPU.Stat(ppid: 4100, own: 731 + 245, reapedChildren: 17 + 9))
    }

    /// The command name may hold spaces and parentheses: fields are counted from the last `)`.
    @Test func commandNameWithSpacesAndParentheses() {
        let line = Self.line.replacingOccurrences(of: "(postgres)", with: "(a) b (c d))")
        #expect(ProcessCPU.parse(line)?.own == 976)
        #expect(ProcessCPU.parse(line)?.ppid == 4100)
    }

    @Test func refusesWhatIsNotAStatLine() {
        #expect(ProcessCPU.parse("") == nil)
        #expect(ProcessCPU.parse("4242 postgres S 1 2 3") == nil)
        #expect(ProcessCPU.parse("4242 (postgres) S 4100 4100") == nil)
        #expect(ProcessCPU.parse(Self.line.replacingOccurrences(of: " 731 ", with: " x ")) == nil)
        // utime + stime past UInt64 is not a reading.
        #expect(ProcessCPU.parse(Self.line.replacingOccurrences(of: " 731 245 ", with: " 18446744073709551615 1 ")) == nil)
    }

    /// The root, its direct children and the root's reaped children count; other processes do not.
    @Test func treeSumsRootChildrenAndReaped() {
        let stats: [Int32: ProcessCPU.Stat] = [
            100: .init(ppid: 1, own: 10, reapedChildren: 5), 101: .init(ppid: 100, own: 20, reapedChildren: 99),
            102: .init(ppid: 100, own: 30, reapedChildren: 0), 200: .init(ppid: 1, own: 1000, reapedChildren: 0),
            201: .init(ppid: 101, own: 7, reapedChildren: 0),
        ]
        let ticks = Double(10 + 5 + 20 + 30)
        let seconds = ProcessCPU.seconds(tree: 100, in: stats)
        let perTick = ProcessCPU.seconds(tree: 200, in: stats)! / 1000
        #expect(seconds == ticks * perTick)
        #expect(ProcessCPU.seconds(tree: 300, in: stats) == nil)
        // The benchmark's own time leaves out its children (the worker) and their reaped time.
        #expect(ProcessCPU.seconds(own: 100, in: stats) == 10 * perTick)
        #expect(ProcessCPU.seconds(own: 300, in: stats) == nil)
    }

    /// This process's own line parses (the kernel's real format) into the fields the tree sum needs: its
    /// parent is the one the kernel names.
    @Test func readsItself() {
        let stats = ProcessCPU.readAll()
        #expect(stats[getpid()]?.ppid == getppid())
        #expect(stats[getppid()] != nil)
    }

    @Test func differenceNeedsBothAndNoRestart() {
        #expect(PhaseCost.difference(1.5, 4) == 2.5)
        #expect(PhaseCost.difference(nil, 4) == nil)
        #expect(PhaseCost.difference(1, nil) == nil)
        // A process that restarted counts from zero: not a difference.
        #expect(PhaseCost.difference(4, 1) == nil)
    }
}

/// The worker's CPU by its threads' role: names read from task stat lines, each name's role, and the
/// difference of two readings with threads that start, end or reuse an id between them.
@Suite struct WorkerThreadsCPUTests {
    typealias Role = WorkerThreadsCPU.Role

    @Test func namesComeFromBetweenTheParentheses() {
        #expect(WorkerThreadsCPU.name(ProcessCPUTests.line) == "postgres")
        #expect(WorkerThreadsCPU.name("17 (rdk:broker111) S 1 2") == "rdk:broker111")
        #expect(WorkerThreadsCPU.name("17 (a (b)) S 1 2") == "a (b)")
        #expect(WorkerThreadsCPU.name("17 a S 1 2") == nil)
    }

    @Test func rolesByThreadName() {
        let names: [(String, Role)] = [
            ("batch-0", .lanes), ("batch-11", .lanes), ("oot.default-qos", .deciding), ("-qos.overcommit", .deciding),
            ("kafka-poll", .consumer), ("kafka-delivery", .publisher), ("publish-retry", .publisher),
            ("rdk:broker111", .librdkafka), ("rdk:main", .librdkafka), ("attest-worker", .other), ("MHD-listen", .other),
        ]
        for (name, role) in names { #expect(Role.of(name) == role, "\(name)") }
    }

    @Test func differencesByRole() {
        let t = Double(ProcessCPU.ticksPerSecond)
        let before: [Int32: WorkerThreadsCPU.Thread] = [
            1: .init(name: "batch-0", ticks: 100), 2: .init(name: "kafka-poll", ticks: 50),
            3: .init(name: "oot.default-qos", ticks: 10), 4: .init(name: "events", ticks: 5),
        ]
        let after: [Int32: WorkerThreadsCPU.Thread] = [
            1: .init(name: "batch-0", ticks: 160), 2: .init(name: "kafka-poll", ticks: 55),
            // Thread 3 ended; a libdispatch thread started with id 5, and id 4 now names another thread.
            5: .init(name: "oot.default-qos", ticks: 30), 4: .init(name: "rdk:broker1", ticks: 7),
        ]
        // The process spent 120 ticks: 60 + 5 + 30 + 7 in the threads read, 18 in the thread that ended.
        let seconds = WorkerThreadsCPU.seconds(before: before, after: after, processSeconds: 120 / t)
        #expect(abs(seconds[.lanes]! - 60 / t) < 1e-9)
        #expect(abs(seconds[.consumer]! - 5 / t) < 1e-9)
        #expect(abs(seconds[.deciding]! - 30 / t) < 1e-9)
        #expect(abs(seconds[.librdkafka]! - 7 / t) < 1e-9)
        #expect(abs(seconds[.other]! - 18 / t) < 1e-9)
        #expect(seconds[.publisher] == nil)
    }
}

/// The latency split at the verdict's create time.
@Suite struct LatencyStagesTests {
    @Test func splitsAtTheCreateTimeAndSorts() {
        let stages = LatencyStages([
            .init(sentMs: 1000, acknowledgedMs: 1012, createdMs: 1030, readMs: 1032),
            .init(sentMs: 2000, acknowledgedMs: 2003, createdMs: 2005, readMs: 2105),
            .init(sentMs: 3000, acknowledgedMs: nil, createdMs: nil, readMs: 3050),
        ])
        #expect(stages.toVerdictMs == [5, 30])
        #expect(stages.producingMs == [3, 12])
        #expect(stages.verdictTripMs == [2, 100])
    }

    /// Millisecond truncation can put the create time a tick before the send or after the read: zero, not negative.
    @Test func truncationDoesNotGoNegative() {
        let stages = LatencyStages([.init(sentMs: 1000, acknowledgedMs: 999, createdMs: 999, readMs: 998)])
        #expect(stages.toVerdictMs == [0])
        #expect(stages.producingMs == [0])
        #expect(stages.verdictTripMs == [0])
    }

    @Test func percentileIsNearestRank() {
        let values = (1...100).map(Double.init)
        #expect(PipelineBenchmark.percentile(values, 0.50) == 50)
        #expect(PipelineBenchmark.percentile(values, 0.99) == 99)
        #expect(PipelineBenchmark.percentile([], 0.99) == 0)
    }
}

/// The worker's stage histogram as the benchmark scrapes it: parsing, the difference of two scrapes, and the
/// bucket holding a quantile.
@Suite struct StageHistogramTests {
    static func exposition(broker: [UInt64], publish: [UInt64] = [0, 0, 0]) -> String {
        """
        # HELP attest_job_stage_seconds A job's time per stage.
        # TYPE attest_job_stage_seconds histogram
        attest_job_stage_seconds_bucket{stage="broker",le="0.001"} \(broker[0])
        attest_job_stage_seconds_bucket{stage="broker",le="0.01"} \(broker[1])
        attest_job_stage_seconds_bucket{stage="broker",le="+Inf"} \(broker[2])
        attest_job_stage_seconds_sum{stage="broker"} 1.5
        attest_job_stage_seconds_count{stage="broker"} \(broker[2])
        attest_job_stage_seconds_bucket{stage="publish",le="0.001"} \(publish[0])
        attest_job_stage_seconds_bucket{stage="publish",le="0.01"} \(publish[1])
        attest_job_stage_seconds_bucket{stage="publish",le="+Inf"} \(publish[2])
        attest_batch_seconds_bucket{le="0.001"} 99
        attest_job_stage_seconds_bucket{stage="queued",le="zz"} 5
        """
    }

    @Test func parsesOnlyTheStageBuckets() {
        let histogram = StageHistogram(exposition: Self.exposition(broker: [1, 2, 3]))
        #expect(histogram.stages.keys.sorted() == ["broker", "publish"])
        #expect(histogram.stages["broker"]!.map(\.count) == [1, 2, 3])
        #expect(histogram.stages["broker"]!.map(\.bound) == [0.001, 0.01, .infinity])
    }

    /// Only what the phase added counts: jobs before the first scrape do not move its quantiles.
    @Test func differenceIsThePhase() {
        let before = StageHistogram(exposition: Self.exposition(broker: [1000, 1000, 1000]))
        let after = StageHistogram(exposition: Self.exposition(broker: [1000, 1090, 1100], publish: [10, 10, 10]))
        let phase = after.since(before)
        #expect(phase.stages["broker"]!.map(\.count) == [0, 90, 100])
        #expect(phase.quantileMs("broker", 0.50) == 10)
        // The 99th of 100 lies past 10 ms: in +Inf, which has no bound.
        #expect(phase.quantileMs("broker", 0.90) == 10)
        #expect(phase.quantileMs("broker", 0.99) == nil)
        #expect(phase.quantileMs("publish", 0.99) == 1)
        #expect(phase.quantileMs("queued", 0.5) == nil)
    }

    /// A counter lower after than before (a restarted worker) counts nothing, not a wrapped huge number.
    @Test func restartCountsNothing() {
        let before = StageHistogram(exposition: Self.exposition(broker: [5, 6, 7]))
        let after = StageHistogram(exposition: Self.exposition(broker: [1, 1, 1]))
        #expect(after.since(before).stages["broker"]!.map(\.count) == [0, 0, 0])
        #expect(after.since(before).quantileMs("broker", 0.5) == nil)
    }
}

/// The requests of a run's clients, from the benchmark's own clients and the worker's /metrics.
@Suite struct BrokerRequestTallyTests {
    @Test func theWorkersCountsComeFromItsMetricsBesideTheBenchmarksClients() {
        let exposition = """
            # TYPE attest_kafka_requests_total counter
            attest_kafka_requests_total{client="consumer",request="Fetch"} 120
            attest_kafka_requests_total{client="producer",request="Produce"} 9
            attest_kafka_requests_total{client="producer",request="Produce"} not a number
            attest_kafka_requests_total{request="Fetch"} 5
            attest_kafka_requests_totalish{client="consumer",request="Fetch"} 5
            """
        let tally = BrokerRequestTally(
            producer: BrokerRequests(counts: ["Produce": 500]), reader: nil, workerExposition: exposition)
        #expect(tally.clients == [
            "bench producer": BrokerRequests(counts: ["Produce": 500]), "bench reader": BrokerRequests(),
            "worker consumer": BrokerRequests(counts: ["Fetch": 120]), "worker producer": BrokerRequests(counts: ["Produce": 9]),
        ])
        #expect(tally.total == 629)
        let later = BrokerRequestTally(
            producer: BrokerRequests(counts: ["Produce": 800]), reader: BrokerRequests(counts: ["Fetch": 40]),
            workerExposition: exposition.replacingOccurrences(of: "} 120", with: "} 200"))
        let phase = later.since(tally)
        #expect(phase.total == 300 + 40 + 80)
        #expect(phase.rows.map(\.client) == ["bench producer", "worker consumer", "bench reader"])
    }
}
