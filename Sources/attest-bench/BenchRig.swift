import AttestCLI
import AttestCore
import AttestJobs
import AttestMint
import AttestVerifier
import Foundation
import KafkaClient
import PostgresClient
import Store
import Worker

/// What the end-to-end benchmarks (`attest-bench pipeline`, `attest-bench soak`) run on: a fresh test PKI
/// and a fresh Android test PKI whose roots the worker trusts, then on `start` a fresh app in the migrated database, fresh topics, a
/// child `attest-worker run`, a job producer and a verdict reader. `close` stops the worker and deletes the
/// run's rows and topics.
final class BenchRig {
    /// The settings both benchmarks share, from the command line and the environment.
    struct Options {
        var threads = ProcessInfo.processInfo.activeProcessorCount
        var batchSize: Int?
        /// The worker's ATTEST_BATCH_LANES (`--batch-lanes`); nil: its default.
        var batchLanes: Int?
        /// `fetch.wait.max.ms` of the worker's and the verdict reader's consumers (`--fetch-wait-ms`): the
        /// test broker does not wake a waiting fetch, so its fetch wait is latency a real Kafka does not add.
        var fetchWaitMs: Int?
        /// `linger.ms` of the benchmark's job producer (`--producer-linger-ms`; 1 otherwise, ``JobProducer``):
        /// the backends' side, whose requests the test broker serves on the same cores.
        var producerLingerMs: Int?
        var topicPrefix: String?
        /// Where the worker's log (its stderr: JSON lines and librdkafka's own) is copied when the rig
        /// closes (`--worker-log`); nil: deleted with the run's folder. A stall is found after the fact.
        var workerLog: String?
        /// The worker's ATTEST_LOG_LEVEL (`--worker-log-level`).
        var workerLogLevel = "warning"
        /// Appended to the worker's ATTEST_KAFKA_PROPERTIES only (`--worker-kafka-properties`), e.g.
        /// `debug=fetch`: librdkafka's debug lines land in the worker's log, the bench's clients stay quiet.
        var workerKafkaProperties: String?
        var brokers: String
        var databaseURL: String
        /// ATTEST_KAFKA_PROPERTIES, for the worker and the benchmark's own clients.
        var kafkaProperties: String
        /// The `attest-worker` executable to run: `--worker`, else the one beside this executable.
        var worker: String

        init(_ args: inout Arguments) throws {
            (brokers, kafkaProperties) = try Self.kafka(&args)
            databaseURL = try DatabaseOptions.url(&args)
            if let threads = try args.integer("threads", min: 1) { self.threads = threads }
            batchSize = try args.integer("batch-size", min: 1)
            batchLanes = try args.integer("batch-lanes", min: 1)
            fetchWaitMs = try args.integer("fetch-wait-ms", min: 0)
            producerLingerMs = try args.integer("producer-linger-ms", min: 0)
            topicPrefix = try args.option("topics")
            workerLog = try args.option("worker-log")
            if let level = try args.option("worker-log-level") { workerLogLevel = level }
            workerKafkaProperties = try args.option("worker-kafka-properties")
            worker = try args.option("worker") ?? Self.besideThisExecutable("attest-worker")
            guard FileManager.default.isExecutableFile(atPath: worker) else {
                throw Arguments.UsageError(description: "no attest-worker executable at \(worker): build it, or pass --worker PATH")
            }
        }

        /// The worker's ATTEST_KAFKA_PROPERTIES: the clients' settings, then statistics as often as the
        /// benchmark's own clients report them (``BrokerRequestTally``), the fetch wait, then
        /// `--worker-kafka-properties` (a repeated key keeps its last value, KafkaProperties.parse).
        var workerKafkaPropertiesText: String {
            var text = kafkaProperties + "\nstatistics.interval.ms=\(BrokerRequestTally.statisticsIntervalMs)"
            if let fetchWaitMs { text += "\nfetch.wait.max.ms=\(fetchWaitMs)" }
            if let workerKafkaProperties { text += "\n" + workerKafkaProperties }
            return text
        }

        /// The brokers (`--brokers`, else ATTEST_KAFKA_BROKERS) and the clients' settings
        /// (ATTEST_KAFKA_PROPERTIES) every benchmark on a broker starts from.
        static func kafka(_ args: inout Arguments) throws -> (brokers: String, properties: String) {
            let environment = ProcessInfo.processInfo.environment
            guard let brokers = try args.option("brokers") ?? environment["ATTEST_KAFKA_BROKERS"], !brokers.isEmpty else {
                throw Arguments.UsageError(description: "set ATTEST_KAFKA_BROKERS or pass --brokers")
            }
            return (brokers, environment["ATTEST_KAFKA_PROPERTIES"] ?? "")
        }

        /// `name` in the folder of the running executable, where `swift build` puts every product.
        private static func besideThisExecutable(_ name: String) -> String {
            URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
                .appendingPathComponent(name).path
        }
    }

    /// The pieces `start` brings up.
    struct Live {
        let verdicts: VerdictCollector
        let producer: JobProducer
        let worker: WorkerProcess
        /// The worker's operations listener (/metrics), on loopback.
        let opsPort: Int
        /// PostgreSQL's fsync and synchronous_commit settings during the run.
        let durability: String
    }

    static let teamId = "BENCH12345"
    static let partitions: Int32 = 6

    let options: Options
    /// Names this run's app, consumer group, jobIds and (by default) topics.
    let runId = String(UUID().uuidString.prefix(8)).lowercased()
    let bundleId: String
    let pki: TestPKI
    /// The app's Android package (`com.example.bench.r<runId>`) and the Android test PKI.
    let android: BenchAndroidApp
    let verifier: JobVerifier
    private let directory: URL
    private let anchors: (attestation: String, receipt: String, android: String)
    let connection: PGReconnectingConnection
    private(set) var live: Live?
    /// The run's topics once created and the client that made them, which deletes them at `close` (the test
    /// broker keeps every topic in memory, and slows with each one left).
    private var created: (admin: KafkaAdmin, topics: [String])?

    init(options: Options) throws {
        self.options = options
        bundleId = "bench.\(runId)"
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attest-bench-\(runId)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let trust = try BenchTrust(packageName: "com.example.bench.r\(runId)")
        pki = trust.pki
        android = trust.android
        anchors = (
            directory.appendingPathComponent("attestation-root.pem").path, directory.appendingPathComponent("receipt-root.pem").path,
            directory.appendingPathComponent("android-root.pem").path
        )
        try pki.attestationRootPEM.write(toFile: anchors.attestation, atomically: true, encoding: .utf8)
        try pki.receiptRootPEM.write(toFile: anchors.receipt, atomically: true, encoding: .utf8)
        try android.pki.rootPEM.write(toFile: anchors.android, atomically: true, encoding: .utf8)
        verifier = trust.verifier
        connection = PGReconnectingConnection.bench(options.databaseURL)
    }

    /// Registers the app, creates the topics and starts the reader, the producer and the worker (with
    /// `extraEnvironment` on top of its settings).
    func start(extraEnvironment: [String: String] = [:]) throws -> Live {
        let migrations = try Migrator.bundled
        try connection.run { c throws(PGError) in _ = try Migrator.migrate(c, migrations: migrations) }
        try AttestStore(connection: connection).upsert(
            AppPolicy(teamId: Self.teamId, bundleId: bundleId, environments: .production, android: android.policy))
        let settings = try connection.run { c throws(PGError) in
            try c.execute(BenchRigStatements.Durability())
        }
        let clientProperties = try KafkaProperties.parse(options.kafkaProperties)
            .merging(["bootstrap.servers": options.brokers]) { _, b in b }
        let producerProperties = clientProperties.filter { !KafkaProperties.consumerOnly.contains($0.key) }
        let prefix = options.topicPrefix ?? "bench.\(runId)"
        let topics = (jobs: "\(prefix).jobs", verdicts: "\(prefix).verdicts", deadLetters: "\(prefix).dead")
        let admin = try KafkaAdmin(properties: producerProperties)
        try admin.createTopics([
            (topics.jobs, Self.partitions), (topics.verdicts, Self.partitions), (topics.deadLetters, 1),
        ])
        created = (admin, [topics.jobs, topics.verdicts, topics.deadLetters])
        let opsPort = try WorkerScrape.freeLoopbackPort()
        let live = Live(
            verdicts: try VerdictCollector(
                properties: clientProperties, topic: topics.verdicts, fetchWaitMs: options.fetchWaitMs ?? 10),
            producer: try JobProducer(
                properties: producerProperties.merging(options.producerLingerMs.map { ["linger.ms": "\($0)"] } ?? [:]) { _, b in b },
                topic: topics.jobs),
            worker: try WorkerProcess(
                binary: options.worker, environment: workerEnvironment(topics: topics, opsPort: opsPort)
                    .merging(extraEnvironment) { _, extra in extra },
                logPath: directory.appendingPathComponent("worker.log").path),
            opsPort: opsPort,
            durability: "fsync=\(settings.fsync) synchronous_commit=\(settings.synchronousCommit)")
        self.live = live
        return live
    }

    /// The app's registration as the in-process verification reads it.
    var appRules: AppRules { BenchTrust.appRules(android) }

    /// Stops the worker in order, closes the clients, deletes the run's rows and files.
    func close() {
        if let live {
            live.worker.stop(seconds: 30)
            live.producer.close()
            live.verdicts.close()
            removeRows()
        }
        if let created {
            do { try created.admin.deleteTopics(created.topics) } catch {
                FileHandle.standardError.write(Data("bench: could not delete the run's topics \(created.topics): \(error)\n".utf8))
            }
        }
        if let workerLog = options.workerLog {
            let log = directory.appendingPathComponent("worker.log").path
            try? FileManager.default.removeItem(atPath: workerLog)
            do { try FileManager.default.copyItem(atPath: log, toPath: workerLog) } catch {
                FileHandle.standardError.write(Data("bench: could not keep the worker's log at \(workerLog): \(error)\n".utf8))
            }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// SHA-256 of each verdict PostgreSQL stored for the app, by jobId.
    func storedVerdicts() throws -> [String: [UInt8]] {
        let rows = try connection.run { c throws(PGError) in
            try c.execute(BenchRigStatements.VerdictDigests(teamId: Self.teamId, bundleId: bundleId))
        }
        return Dictionary(rows.map { ($0.jobId, $0.digest) }) { first, _ in first }
    }

    /// Every job against what was published and what PostgreSQL stored: lost when either is missing, decided
    /// twice when two different verdicts were published or the published one is not the stored one.
    static func check(
        _ jobs: [(jobId: String, expectedOK: Bool)], published: [String: VerdictCollector.Record], stored: [String: [UInt8]]
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
        topics: (jobs: String, verdicts: String, deadLetters: String), opsPort: Int
    ) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ATTEST_") }
        environment.merge([
            "ATTEST_KAFKA_BROKERS": options.brokers, "ATTEST_DATABASE_URL": options.databaseURL,
            "ATTEST_KAFKA_PROPERTIES": options.workerKafkaPropertiesText, "ATTEST_JOBS_TOPIC": topics.jobs,
            "ATTEST_VERDICTS_TOPIC": topics.verdicts, "ATTEST_DEADLETTER_TOPIC": topics.deadLetters,
            "ATTEST_CONSUMER_GROUP": "bench-\(runId)", "ATTEST_TRUST_ANCHORS": anchors.attestation,
            "ATTEST_RECEIPT_TRUST_ANCHORS": anchors.receipt, "ATTEST_ANDROID_TRUST_ANCHORS": anchors.android,
            "ATTEST_HTTP_ADDRESS": "127.0.0.1:0", "ATTEST_OPS_HTTP_ADDRESS": "127.0.0.1:\(opsPort)", "ATTEST_WORKERS": "\(options.threads)", "ATTEST_LOG_LEVEL": options.workerLogLevel,
        ]) { _, new in new }
        if let batchSize = options.batchSize { environment["ATTEST_BATCH_SIZE"] = "\(batchSize)" }
        if let batchLanes = options.batchLanes { environment["ATTEST_BATCH_LANES"] = "\(batchLanes)" }
        return environment
    }

    /// Deletes the run's rows of every table and its app (after the worker has stopped): the database is shared.
    private func removeRows() {
        do {
            try connection.run { c throws(PGError) in
                try BenchRigStatements.RemoveApp.run(teamId: Self.teamId, bundleId: bundleId, on: c)
            }
        } catch {
            FileHandle.standardError.write(
                Data("bench: could not delete the run's rows (team \(Self.teamId), bundle \(bundleId)): \(error)\n".utf8))
        }
    }
}

/// The benchmarks' fresh test PKIs (valid 30 days either side of now) and a verifier trusting their roots,
/// as the worker started by ``BenchRig`` trusts them: what the in-process side decides with.
struct BenchTrust {
    let pki: TestPKI
    let android: BenchAndroidApp
    let verifier: JobVerifier

    init(packageName: String) throws {
        let now = Date()
        pki = try TestPKI.generate(validFrom: now.addingTimeInterval(-30 * 86_400), validUntil: now.addingTimeInterval(30 * 86_400))
        android = try BenchAndroidApp(
            packageName: packageName, validFrom: now.addingTimeInterval(-30 * 86_400), validUntil: now.addingTimeInterval(30 * 86_400))
        verifier = JobVerifier(
            trust: TrustConfiguration(
                attestationAnchor: try TrustAnchor(pem: pki.attestationRootPEM), receiptAnchor: try TrustAnchor(pem: pki.receiptRootPEM)),
            androidTrust: try android.trust(), clock: SystemClock())
    }

    /// The bench app's registration as the in-process verification reads it: production keys, the Android package.
    /// nil: an app without an Android package.
    static func appRules(_ android: BenchAndroidApp?) -> AppRules { AppRules(environments: .production, android: android?.policy) }

    var appRules: AppRules { Self.appRules(android) }
}
