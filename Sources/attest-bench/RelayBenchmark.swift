import AttestCLI
import AttestCore
import Dispatch
import Foundation
import KafkaClient
import Synchronization

/// `attest-bench relay`: the least latency the broker leaves a verdict, with no worker, no database and no
/// verification: what `pipeline`'s end-to-end latency at the same rate and fetch wait cannot go below.
struct RelayBenchmark: Subcommand {
    static let help = """
        usage: attest-bench relay [--json] [--rate R] [--seconds S] [--fetch-wait-ms W] [--bytes B]
                                  [--topics PREFIX] [--brokers HOST:PORT]

        The broker's part of a verdict's latency, as `attest-bench pipeline`'s latency phase meets it: jobs
        of B bytes (default 1000) produced evenly at R jobs/s (default 100) for S seconds (default 10) by
        the pipeline's job producer, each under a key of its own, onto PREFIX.jobs (6 partitions); a relay
        consumer with the worker's fetch wait W ms (default 1) hands each record at once to a producer
        configured as the worker's verdict producer (idempotent, acks=all, linger.ms 0) onto PREFIX.verdicts,
        where the pipeline's verdict reader (fetch wait W too) reads it. Two trips through the broker, the
        clients a worker needs and nothing between them (a record the relay's producer refuses or cannot
        deliver is counted and reported apart, so a job not relayed is told from one the broker did not
        serve). Reports p50 and p99 of job handed over → relayed
        record read, split as `pipeline` splits it: job → relayed (the record's create time), of it the
        job's own produce (until acknowledged), and the relayed record's trip to the reader. Topics are
        created fresh (default PREFIX bench.relay.<random>) and deleted at the end.
        Brokers and client settings: ATTEST_KAFKA_BROKERS and ATTEST_KAFKA_PROPERTIES (eval "$(ops/stack env)").
        --json prints one object: {"rate", "fetchWaitMs", "bytes", "jobs", "lost", "p50Ms", "p99Ms",
        "toRelayedP50Ms", "toRelayedP99Ms", "producingP50Ms", "producingP99Ms", "tripP50Ms", "tripP99Ms"}.
        Exit status 1 when a job was not relayed.
        """

    struct Options {
        var rate = 100.0
        var seconds = 10.0
        var fetchWaitMs = 1
        var bytes = 1000
        var topicPrefix: String?
        var brokers: String
        var kafkaProperties: String

        init(_ args: inout Arguments) throws {
            (brokers, kafkaProperties) = try BenchRig.Options.kafka(&args)
            if let rate = try args.integer("rate", min: 1) { self.rate = Double(rate) }
            if let seconds = try args.integer("seconds", min: 1) { self.seconds = Double(seconds) }
            if let wait = try args.integer("fetch-wait-ms", min: 0) { fetchWaitMs = wait }
            if let bytes = try args.integer("bytes", min: 1) { self.bytes = bytes }
            topicPrefix = try args.option("topics")
        }
    }

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let options = try Options(&args)
        _ = try args.positionals(max: 0)
        let results = try measure(options)
        print(json ? results.json.serialized() : results.table)
        return results.lost == 0 ? 0 : 1
    }

    struct Results {
        let options: Options
        let jobs: Int
        let lost: Int
        /// Records the relay read but its producer refused or could not deliver (within `lost`).
        let refused: Int
        /// Job handed to the producer → relayed record read, ms, sorted.
        let latencies: [Double]
        let stages: LatencyStages

        var json: JSONValue {
            func ms(_ sorted: [Double], _ p: Double) -> JSONValue { .double(PipelineBenchmark.percentile(sorted, p)) }
            return .object([
                ("rate", .int(Int64(options.rate))), ("fetchWaitMs", .int(Int64(options.fetchWaitMs))),
                ("bytes", .int(Int64(options.bytes))), ("jobs", .int(Int64(jobs))), ("lost", .int(Int64(lost))),
                ("p50Ms", .double((PipelineBenchmark.percentile(latencies, 0.50) * 10).rounded() / 10)),
                ("p99Ms", .double((PipelineBenchmark.percentile(latencies, 0.99) * 10).rounded() / 10)),
                ("toRelayedP50Ms", ms(stages.toVerdictMs, 0.50)), ("toRelayedP99Ms", ms(stages.toVerdictMs, 0.99)),
                ("producingP50Ms", ms(stages.producingMs, 0.50)), ("producingP99Ms", ms(stages.producingMs, 0.99)),
                ("tripP50Ms", ms(stages.verdictTripMs, 0.50)), ("tripP99Ms", ms(stages.verdictTripMs, 0.99)),
            ])
        }

        var table: String {
            func row(_ name: String, _ sorted: [Double]) -> String {
                name.padding(toLength: 44, withPad: " ", startingAt: 0)
                    + String(format: "p50 %.1f ms, p99 %.1f ms", PipelineBenchmark.percentile(sorted, 0.50), PipelineBenchmark.percentile(sorted, 0.99))
            }
            return [
                String(format: "%d jobs of %d bytes at %.0f jobs/s, fetch wait %d ms, %d not relayed (%d refused by the relay's producer)",
                    jobs, options.bytes, options.rate, options.fetchWaitMs, lost, refused),
                row("job → relayed record read", latencies),
                row("  job → relayed (record's create time)", stages.toVerdictMs),
                row("    of it, job produced (acknowledged)", stages.producingMs),
                row("  relayed record's trip to the reader", stages.verdictTripMs),
            ].joined(separator: "\n")
        }
    }

    private static func note(_ text: String) {
        FileHandle.standardError.write(Data("bench relay: \(text)\n".utf8))
    }

    static func measure(_ options: Options) throws -> Results {
        let client = try KafkaProperties.parse(options.kafkaProperties).merging(["bootstrap.servers": options.brokers]) { _, b in b }
        let producerProperties = client.filter { !KafkaProperties.consumerOnly.contains($0.key) }
        let prefix = options.topicPrefix ?? "bench.relay.\(String(UUID().uuidString.prefix(8)).lowercased())"
        let topics = (jobs: "\(prefix).jobs", relayed: "\(prefix).verdicts")
        let admin = try KafkaAdmin(properties: producerProperties)
        try admin.createTopics([(topics.jobs, BenchRig.partitions), (topics.relayed, BenchRig.partitions)])
        // Runs last, after the clients below have closed: the test broker keeps every topic in memory.
        defer {
            do { try admin.deleteTopics([topics.jobs, topics.relayed]) } catch { note("could not delete the topics \(prefix).*: \(error)") }
        }
        let reader = try VerdictCollector(properties: client, topic: topics.relayed, fetchWaitMs: options.fetchWaitMs)
        defer { reader.close() }
        let relay = try Relay(
            consumer: client.merging(["group.id": "bench-relay-\(UUID().uuidString)", "fetch.wait.max.ms": "\(options.fetchWaitMs)"]) { _, b in b },
            producer: producerProperties.merging(["linger.ms": "0", "acks": "all"]) { _, b in b }, from: topics.jobs, to: topics.relayed)
        defer { relay.close() }
        let producer = try JobProducer(properties: producerProperties, topic: topics.jobs)
        defer { producer.close() }

        let filler = String(repeating: "x", count: options.bytes)
        func jobs(_ count: Int, _ tag: String) -> [PipelineWorkload.Message] {
            (0..<count).map { i in
                let jobId = "relay-\(tag)-\(i)-\(UUID().uuidString.prefix(8))"
                return PipelineWorkload.Message(jobId: jobId, keyId: jobId, expectedOK: true, [("filler", .string(filler))])
            }
        }
        // Warm-up: the relay and the reader have joined their groups once these came through.
        let warmUp = jobs(20, "w")
        reader.expect(warmUp.map(\.jobId))
        for message in warmUp { try producer.send(message) }
        try producer.flush()
        guard reader.wait(stallSeconds: 60) == 0 else { throw BenchmarkFailure("the warm-up jobs were not relayed within 60 s") }

        let paced = jobs(Int((options.rate * options.seconds).rounded(.up)), "p")
        note(String(format: "producing %d jobs at %.0f jobs/s", paced.count, options.rate))
        var lost = 0
        let (latencies, stages) = try PacedProduction.run(paced, rate: options.rate, producer: producer, reader: reader) {
            lost = reader.wait(stallSeconds: 30)
        }
        let refused = relay.refused
        if refused > 0 { note("the relay's producer refused or could not deliver \(refused) records") }
        return Results(options: options, jobs: paced.count, lost: lost, refused: refused, latencies: latencies, stages: stages)
    }

    /// The stand-in for a worker: each record read is produced again at once, its key as the `jobId` header
    /// the verdict reader goes by, on a thread of its own.
    private final class Relay: Sendable {
        private let consumer: KafkaConsumer
        private let producer: KafkaProducer
        private let stopping = Atomic<Bool>(false)
        private let failures = Atomic<Int>(0)
        private let stopped = DispatchSemaphore(value: 0)

        init(consumer: [String: String], producer: [String: String], from: String, to: String) throws {
            self.consumer = try KafkaConsumer(properties: consumer, topics: [from], delegate: nil)
            self.producer = try KafkaProducer(properties: producer)
            let thread = Thread { [self] in loop(to: to) }
            thread.name = "bench-relay"
            thread.start()
        }

        private func loop(to topic: String) {
            while !stopping.load(ordering: .relaxed) {
                for message in consumer.poll(max: 1000, timeoutMs: 50) {
                    let key = message.key ?? []
                    do {
                        try producer.produce(topic: topic, key: key, value: message.value, headers: [("jobId", key)]) { [self] result in
                            if case .failure = result { failures.add(1, ordering: .relaxed) }
                        }
                    } catch {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            }
            stopped.signal()
        }

        /// Records refused by the producer or not delivered, so far.
        var refused: Int { failures.load(ordering: .relaxed) }

        func close() {
            stopping.store(true, ordering: .relaxed)
            stopped.wait()
            producer.close(timeoutMs: 5_000)
            consumer.close()
        }
    }
}
