import AttestCLI
import KafkaClient
import Testing

@testable import attest_bench

/// The options that let a stall be traced after a run: the worker's log kept, its level, and librdkafka
/// settings for the worker alone.
@Suite struct WorkerLogOptionsTests {
    private static func options(_ extra: [String]) throws -> BenchRig.Options {
        var args = Arguments(
            ["--brokers", "127.0.0.1:1", "--database-url", "postgresql://postgres@127.0.0.1:1/attest", "--worker", "/bin/true"]
                + extra)
        return try BenchRig.Options(&args)
    }

    @Test func workerPropertiesComeLastSoTheyWinOverTheFetchWait() throws {
        var options = try Self.options(["--fetch-wait-ms", "5", "--worker-kafka-properties", "debug=fetch,fetch.wait.max.ms=2"])
        options.kafkaProperties = "fetch.wait.max.ms=100,session.timeout.ms=6000"
        let parsed = try KafkaProperties.parse(options.workerKafkaPropertiesText)
        #expect(parsed["debug"] == "fetch")
        #expect(parsed["fetch.wait.max.ms"] == "2")
        #expect(parsed["session.timeout.ms"] == "6000")
    }

    @Test func withoutThemTheWorkerGetsTheClientsSettingsAndTheFetchWait() throws {
        var options = try Self.options(["--fetch-wait-ms", "5"])
        options.kafkaProperties = "fetch.wait.max.ms=100"
        #expect(try KafkaProperties.parse(options.workerKafkaPropertiesText) == [
            "fetch.wait.max.ms": "5", "statistics.interval.ms": "\(BrokerRequestTally.statisticsIntervalMs)",
        ])
        #expect(options.producerLingerMs == nil)
        #expect(options.workerLog == nil)
        #expect(options.workerLogLevel == "warning")
    }

    @Test func logPathAndLevel() throws {
        var options = try Self.options(["--worker-log", "/tmp/worker.log", "--worker-log-level", "debug"])
        options.kafkaProperties = "session.timeout.ms=6000"
        #expect(options.workerLog == "/tmp/worker.log")
        #expect(options.workerLogLevel == "debug")
        // The worker reports its requests as often as the benchmark's own clients do.
        #expect(try KafkaProperties.parse(options.workerKafkaPropertiesText) == [
            "session.timeout.ms": "6000", "statistics.interval.ms": "\(BrokerRequestTally.statisticsIntervalMs)",
        ])
    }

    @Test func theWorkersLanes() throws {
        #expect(try Self.options([]).batchLanes == nil)
        #expect(try Self.options(["--batch-lanes", "1"]).batchLanes == 1)
        #expect(throws: Arguments.UsageError.self) { try Self.options(["--batch-lanes", "0"]) }
    }

    @Test func theJobProducersLinger() throws {
        #expect(try Self.options(["--producer-linger-ms", "5"]).producerLingerMs == 5)
        #expect(throws: Arguments.UsageError.self) { try Self.options(["--producer-linger-ms", "-1"]) }
    }
}
