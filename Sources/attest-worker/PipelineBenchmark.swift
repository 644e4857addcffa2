import AttestCore
import AttestJobs
import AttestMint
import AttestVerifier
import Dispatch
import Foundation
import KafkaClient
import PostgresClient
import Worker

/// `attest-worker bench pipeline`: the worker end to end on a real broker and PostgreSQL (a child
/// `attest-worker run` from this binary), next to the in-process verification rate of the same jobs
/// measured in the same run, with every job checked for loss and double decisions.
struct PipelineBenchmark: Subcommand {
    static let help = """
        usage: attest-worker bench pipeline [--json] [--devices N] [--latency-seconds S] [--threads T]
                                            [--batch-size B] [--topics PREFIX] [--brokers HOST:PORT]
                                            [--database-url URL]

        Mints N devices (default 10000) under a fresh test PKI, each with one attestation then nine
        assertions (10% / 90%), one invalid assertion on every other device (5% of all jobs); registers a
        fresh app; creates the topics PREFIX.jobs, PREFIX.verdicts and PREFIX.dead (default PREFIX
        bench.<random>; the caller deletes them); starts `attest-worker run` with T verification threads
        (default: the cores), the worker's defaults otherwise but ATTEST_BATCH_SIZE=B when given. Measures:
          in-process  the jobs verified in this process on T threads (parse, decide against device state
                      kept in memory, serialize the verdict): no broker, no database; half of the devices
                      before the pipeline phases, half after;
          throughput  every job produced at once, keyed by keyId: jobs / (last verdict − first produce);
          latency     fresh devices' jobs, same mix, produced evenly at half that rate for S seconds
                      (default 10): p50 and p99 of verdict consumed − job produced.
        Then checks every job of both phases against the verdicts topic and PostgreSQL: lost (no verdict
        published or none stored), decided twice (two different verdicts published, or the published one
        is not the stored one), and that each verdict accepts exactly the jobs minted valid.

        The run's app, devices and verdicts are deleted from the database afterwards.
        Brokers, database and client settings: ATTEST_KAFKA_BROKERS, ATTEST_DATABASE_URL and
        ATTEST_KAFKA_PROPERTIES (eval "$(ops/stack env)"). Progress goes to stderr. Exit status 1 when a
        job was lost, decided twice or decided against its expected outcome.
        --json prints one object: {"jobs", "jobsPerSec", "coreJobsPerSec", "p50Ms", "p99Ms", "lost",
        "duplicates"}; jobs is the throughput phase's count, lost and duplicates cover both phases.
        """

    struct Failure: Error, CustomStringConvertible {
        let description: String

        init(_ description: String) {
            self.description = description
        }
    }

    /// What the command line chose.
    struct Options {
        var devices = 10_000
        var latencySeconds = 10.0
        var threads = ProcessInfo.processInfo.activeProcessorCount
        var batchSize: Int?
        var topicPrefix: String?
        var brokers: String
        var databaseURL: String
        /// ATTEST_KAFKA_PROPERTIES, for the worker and the benchmark's own clients.
        var kafkaProperties: String

        init(_ args: inout Arguments) throws {
            func number(_ name: String, min: Int) throws -> Int? {
                try args.option(name).map { text in
                    guard let value = Int(text), value >= min else {
                        throw Arguments.UsageError(description: "--\(name) must be a whole number ≥ \(min)")
                    }
                    return value
                }
            }
            let environment = ProcessInfo.processInfo.environment
            guard let brokers = try args.option("brokers") ?? environment["ATTEST_KAFKA_BROKERS"], !brokers.isEmpty else {
                throw Arguments.UsageError(description: "set ATTEST_KAFKA_BROKERS or pass --brokers")
            }
            self.brokers = brokers
            databaseURL = try DatabaseOptions.url(&args)
            kafkaProperties = environment["ATTEST_KAFKA_PROPERTIES"] ?? ""
            if let devices = try number("devices", min: 2) { self.devices = devices }
            if let seconds = try number("latency-seconds", min: 1) { latencySeconds = Double(seconds) }
            if let threads = try number("threads", min: 1) { self.threads = threads }
            batchSize = try number("batch-size", min: 1)
            topicPrefix = try args.option("topics")
        }
    }

    struct Results {
        var devices: Int
        var threads: Int
        /// PostgreSQL's fsync and synchronous_commit settings during the run.
        var durability: String
        /// Jobs of the throughput phase.
        var jobs: Int
        var jobsPerSec: Double
        var coreJobsPerSec: Double
        /// The latency phase's production rate and job count.
        var latencyRate: Double
        var latencyJobs: Int
        var p50Ms: Double
        var p99Ms: Double
        var lost: Int
        var duplicates: Int
        /// Identical verdicts published again for a job (a redelivered job republishes its stored verdict).
        var copies: Int
        /// Verdicts whose acceptance differs from how the job was minted.
        var unexpected: Int

        var passed: Bool { lost == 0 && duplicates == 0 && unexpected == 0 }

        var json: JSONValue {
            .object([
                ("jobs", .int(Int64(jobs))), ("jobsPerSec", .int(Int64(jobsPerSec.rounded()))),
                ("coreJobsPerSec", .int(Int64(coreJobsPerSec.rounded()))), ("p50Ms", .double(Self.tenths(p50Ms))),
                ("p99Ms", .double(Self.tenths(p99Ms))), ("lost", .int(Int64(lost))),
                ("duplicates", .int(Int64(duplicates))),
            ])
        }

        private static func tenths(_ ms: Double) -> Double { (ms * 10).rounded() / 10 }

        var table: String {
            func row(_ name: String, _ value: String) -> String {
                name.padding(toLength: 44, withPad: " ", startingAt: 0) + value
            }
            return [
                "\(jobs) jobs over \(devices) devices (10% attestations, 5% invalid), \(threads) threads, "
                    + "PostgreSQL \(durability)",
                row("end to end, sustained", String(format: "%8.0f jobs/s", jobsPerSec)),
                row("in-process verification, \(threads) threads", String(format: "%8.0f jobs/s", coreJobsPerSec)),
                row("end to end / in-process", String(format: "%8.2f", jobsPerSec / coreJobsPerSec)),
                row(String(format: "latency at %.0f jobs/s (%d jobs)", latencyRate, latencyJobs),
                    String(format: "p50 %.1f ms, p99 %.1f ms", p50Ms, p99Ms)),
                row("lost", "\(lost)"),
                row("decided twice", "\(duplicates)"),
                row("identical verdicts republished", "\(copies)"),
                row("verdicts against expectation", "\(unexpected)"),
            ].joined(separator: "\n")
        }
    }

    static let teamId = "BENCH12345"
    static let partitions: Int32 = 6

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let options = try Options(&args)
        _ = try args.positionals(max: 0)
        let results = try PipelineBenchmark(options: options).run()
        print(json ? results.json.serialized() : results.table)
        return results.passed ? 0 : 1
    }

    let options: Options
    /// Names this run's app, consumer group, jobIds and (by default) topics.
    let runId = String(UUID().uuidString.prefix(8)).lowercased()

    /// Progress, on stderr.
    private static func note(_ text: String) {
        FileHandle.standardError.write(Data("bench pipeline: \(text)\n".utf8))
    }

    func run() throws -> Results {
        let bundleId = "bench.\(runId)"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attest-bench-\(runId)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // The PKI and the jobs: minted right before the run, so every receivedAt is fresh.
        let now = Date()
        let pki = try TestPKI.generate(
            validFrom: now.addingTimeInterval(-30 * 86_400), validUntil: now.addingTimeInterval(30 * 86_400))
        let anchors = (
            directory.appendingPathComponent("attestation-root.pem").path,
            directory.appendingPathComponent("receipt-root.pem").path
        )
        try pki.attestationRootPEM.write(toFile: anchors.0, atomically: true, encoding: .utf8)
        try pki.receiptRootPEM.write(toFile: anchors.1, atomically: true, encoding: .utf8)
        func mint(_ devices: Int, _ phase: String) throws -> PipelineWorkload {
            let start = Date()
            let workload = try PipelineWorkload.mint(
                pki: pki, teamId: Self.teamId, bundleId: bundleId, devices: devices, prefix: "\(runId)-\(phase)",
                threads: ProcessInfo.processInfo.activeProcessorCount)
            Self.note(String(
                format: "minted %d jobs for %d devices in %.1f s", workload.jobs.count, devices, Date().timeIntervalSince(start)))
            return workload
        }
        let warmUp = try mint(8, "w")
        let stream = try mint(options.devices, "t")

        // In-process verification of the same jobs: half of the devices now, half after the pipeline
        // phases, so that a change in the machine's load weighs on both sides of the ratio.
        let verifier = JobVerifier(
            trust: TrustConfiguration(
                attestationAnchor: try TrustAnchor(pem: pki.attestationRootPEM),
                receiptAnchor: try TrustAnchor(pem: pki.receiptRootPEM)),
            clock: SystemClock())
        let halves = [0..<(stream.devices.count / 2), (stream.devices.count / 2)..<stream.devices.count]
        func verifyInProcess(_ half: Int) throws -> (jobs: Int, seconds: Double) {
            let result = stream.verifyInProcess(halves[half], verifier: verifier, policy: .production, threads: options.threads)
            guard result.unexpected == 0 else {
                throw Failure("in-process verification: \(result.unexpected) verdicts against expectation")
            }
            Self.note(String(
                format: "in-process, half %d: %.0f jobs/s on %d threads", half + 1, Double(result.jobs) / result.seconds,
                options.threads))
            return (result.jobs, result.seconds)
        }
        let firstHalf = try verifyInProcess(0)

        // A fresh app in a migrated database, fresh topics, then the worker and the verdict reader.
        let connection = PGReconnectingConnection(conninfo: options.databaseURL, applicationName: "attest-bench")
        let migrations = try Migrator.bundled
        try connection.run { c throws(PGError) in _ = try Migrator.migrate(c, migrations: migrations) }
        try AttestStore(connection: connection).upsert(
            AppPolicy(teamId: Self.teamId, bundleId: bundleId, environments: .production))
        defer { Self.remove(bundleId: bundleId, connection) }
        let settings = try connection.run { c throws(PGError) in
            try c.execute("SELECT current_setting('fsync'), current_setting('synchronous_commit')")
        }
        let durability = "fsync=\(settings.string(0, 0) ?? "?") synchronous_commit=\(settings.string(0, 1) ?? "?")"

        let clientProperties = try KafkaProperties.parse(options.kafkaProperties)
            .merging(["bootstrap.servers": options.brokers]) { _, b in b }
        let producerProperties = clientProperties.filter { !RunCommand.consumerOnly.contains($0.key) }
        let prefix = options.topicPrefix ?? "bench.\(runId)"
        let topics = (jobs: "\(prefix).jobs", verdicts: "\(prefix).verdicts", deadLetters: "\(prefix).dead")
        try KafkaAdmin(properties: producerProperties).createTopics([
            (topics.jobs, Self.partitions), (topics.verdicts, Self.partitions), (topics.deadLetters, 1),
        ])
        let verdicts = try VerdictCollector(properties: clientProperties, topic: topics.verdicts)
        defer { verdicts.close() }
        let producer = try JobProducer(properties: producerProperties, topic: topics.jobs)
        defer { producer.close() }
        let worker = try WorkerProcess(
            environment: workerEnvironment(topics: topics, anchors: anchors),
            logPath: directory.appendingPathComponent("worker.log").path)
        defer { worker.stop(seconds: 30) }
        let pipeline = Pipeline(producer: producer, verdicts: verdicts, worker: worker)

        // Warm-up: the worker and the reader have joined their groups once these have verdicts.
        _ = try pipeline.produceAtOnce(warmUp, phase: "warm-up", stallSeconds: 60)
        Self.note("throughput: producing \(stream.jobs.count) jobs")
        let jobsPerSec = try pipeline.produceAtOnce(stream, phase: "throughput phase", stallSeconds: 30)
        Self.note(String(format: "throughput: %.0f jobs/s end to end", jobsPerSec))
        let rate = jobsPerSec / 2
        let paced = try mint(max(1, Int((rate * options.latencySeconds).rounded(.up)) / 10), "l")
        Self.note(String(format: "latency: producing %d jobs at %.0f jobs/s", paced.jobs.count, rate))
        let latencies = try pipeline.producePaced(paced, rate: rate)

        // Stop the worker in order (a redelivery while it leaves would publish again), then check every job.
        worker.stop(seconds: 30)
        let secondHalf = try verifyInProcess(1)
        let check = Self.check(
            warmUp.jobs + stream.jobs + paced.jobs, published: verdicts.records,
            stored: try storedVerdicts(connection, bundleId: bundleId))
        return Results(
            devices: options.devices, threads: options.threads, durability: durability, jobs: stream.jobs.count,
            jobsPerSec: jobsPerSec,
            coreJobsPerSec: Double(firstHalf.jobs + secondHalf.jobs) / (firstHalf.seconds + secondHalf.seconds),
            latencyRate: rate, latencyJobs: paced.jobs.count, p50Ms: Self.percentile(latencies, 0.50),
            p99Ms: Self.percentile(latencies, 0.99), lost: check.lost, duplicates: check.duplicates, copies: check.copies,
            unexpected: check.unexpected)
    }

    /// The running pipeline as the phases drive it: jobs in, verdicts out.
    private struct Pipeline {
        let producer: JobProducer
        let verdicts: VerdictCollector
        let worker: WorkerProcess

        /// Produces every job as fast as the client takes them and waits for their verdicts; returns
        /// jobs / (last verdict − first produce) in jobs per second.
        func produceAtOnce(_ workload: PipelineWorkload, phase: String, stallSeconds: Double) throws -> Double {
            verdicts.expect(workload.jobs.map(\.jobId))
            let start = DispatchTime.now().uptimeNanoseconds
            for message in workload.jobs { try producer.send(message) }
            try producer.flush()
            try settle(phase, stallSeconds: stallSeconds)
            let records = verdicts.records
            let last = workload.jobs.compactMap { records[$0.jobId]?.firstSeen }.max() ?? start
            return Double(workload.jobs.count) / (Double(last - start) / 1e9)
        }

        /// Produces the jobs evenly spaced at `rate` per second and waits for their verdicts; returns each
        /// job's latency from being handed to the producer to its verdict being read, in milliseconds, sorted.
        func producePaced(_ workload: PipelineWorkload, rate: Double) throws -> [Double] {
            verdicts.expect(workload.jobs.map(\.jobId))
            var sentAt = [UInt64](repeating: 0, count: workload.jobs.count)
            let start = DispatchTime.now().uptimeNanoseconds
            for (i, message) in workload.jobs.enumerated() {
                let due = start + UInt64(Double(i) / rate * 1e9)
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { Thread.sleep(forTimeInterval: Double(due - now) / 1e9) }
                sentAt[i] = DispatchTime.now().uptimeNanoseconds
                try producer.send(message)
            }
            try producer.flush()
            try settle("latency phase", stallSeconds: 30)
            let records = verdicts.records
            return workload.jobs.indices.compactMap { i in
                records[workload.jobs[i].jobId].map { Double($0.firstSeen - sentAt[i]) / 1e6 }
            }.sorted()
        }

        /// Waits for the announced verdicts; fails when the worker is gone, notes jobs still without one.
        private func settle(_ phase: String, stallSeconds: Double) throws {
            let missing = verdicts.wait(stallSeconds: stallSeconds)
            guard worker.isRunning else { throw Failure("the worker exited during the \(phase):\n\(worker.logTail())") }
            if missing > 0 {
                PipelineBenchmark.note("\(phase): \(missing) jobs still without a verdict after \(Int(stallSeconds)) s idle")
            }
        }
    }

    /// Every job against what was published and what PostgreSQL stored: lost when either is missing, decided
    /// twice when two different verdicts were published or the published one is not the stored one.
    private static func check(
        _ jobs: [PipelineWorkload.Message], published: [String: VerdictCollector.Record], stored: [String: [UInt8]]
    ) -> (lost: Int, duplicates: Int, copies: Int, unexpected: Int) {
        var check = (lost: 0, duplicates: 0, copies: 0, unexpected: 0)
        for message in jobs {
            guard let record = published[message.jobId], let digest = stored[message.jobId] else {
                check.lost += 1
                continue
            }
            if record.digests.count > 1 || record.digests[0] != digest { check.duplicates += 1 }
            if record.ok != message.expectedOK { check.unexpected += 1 }
            check.copies += record.copies - 1
        }
        return check
    }

    /// The worker's settings: this run's topics, group and trust anchors; the caller's brokers, database
    /// and client settings; everything else at the worker's defaults (ATTEST_* of the caller's environment
    /// are not passed on).
    private func workerEnvironment(
        topics: (jobs: String, verdicts: String, deadLetters: String), anchors: (String, String)
    ) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ATTEST_") }
        environment.merge([
            "ATTEST_KAFKA_BROKERS": options.brokers, "ATTEST_DATABASE_URL": options.databaseURL,
            "ATTEST_KAFKA_PROPERTIES": options.kafkaProperties, "ATTEST_JOBS_TOPIC": topics.jobs,
            "ATTEST_VERDICTS_TOPIC": topics.verdicts, "ATTEST_DEADLETTER_TOPIC": topics.deadLetters,
            "ATTEST_CONSUMER_GROUP": "bench-\(runId)", "ATTEST_TRUST_ANCHORS": anchors.0,
            "ATTEST_RECEIPT_TRUST_ANCHORS": anchors.1,
            "ATTEST_HTTP_ADDRESS": "127.0.0.1:0", "ATTEST_WORKERS": "\(options.threads)", "ATTEST_LOG_LEVEL": "warning",
        ]) { _, new in new }
        if let batchSize = options.batchSize { environment["ATTEST_BATCH_SIZE"] = "\(batchSize)" }
        return environment
    }

    /// SHA-256 of each verdict PostgreSQL stored for the app, by jobId.
    private func storedVerdicts(_ connection: PGReconnectingConnection, bundleId: String) throws -> [String: [UInt8]] {
        let rows = try connection.run { c throws(PGError) in
            try c.execute(
                """
                SELECT job_id, sha256(convert_to(verdict_json, 'UTF8')) FROM verdicts
                WHERE team_id = $1 AND bundle_id = $2
                """,
                [.text(Self.teamId), .text(bundleId)])
        }
        var stored = [String: [UInt8]]()
        for r in 0..<rows.count {
            if let jobId = rows.string(r, 0), let digest = rows.bytes(r, 1) { stored[jobId] = digest }
        }
        return stored
    }

    /// Deletes the run's verdicts, devices and app (after the worker has stopped): the database is shared.
    private static func remove(bundleId: String, _ connection: PGReconnectingConnection) {
        do {
            try connection.run { c throws(PGError) in
                _ = try c.execute(
                    """
                    WITH v AS (DELETE FROM verdicts WHERE team_id = $1 AND bundle_id = $2),
                    d AS (DELETE FROM devices WHERE team_id = $1 AND bundle_id = $2)
                    DELETE FROM apps WHERE team_id = $1 AND bundle_id = $2
                    """,
                    [.text(teamId), .text(bundleId)])
            }
        } catch {
            note("could not delete the run's rows (team \(teamId), bundle \(bundleId)): \(error)")
        }
    }

    /// The nearest-rank percentile of sorted values; 0 for none.
    private static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1)]
    }
}
