import AttestCLI
import AttestCore
import AttestJobs
import AttestVerifier
import Durations
import Foundation
import KafkaClient
import PostgresClient
import Store
import Worker

/// `attest-bench lane`: what one batch lane costs per batch and per job, with no broker: the part of the
/// worker's CPU a batch's size amortizes, told apart from the fetching, handing over and publishing around
/// it that `pipeline` measures together.
struct LaneBenchmark: Subcommand {
    static let help = """
        usage: attest-bench lane [--json] [--sizes N,N,...] [--jobs J] [--threads T] [--postgres-pid PID]
                                 [--stored-days D [--stored-rows R]]

        One batch lane in this process: the pipeline's job stream (minted as `attest-bench pipeline` mints
        it, a quarter of the devices Android ones, fresh devices for each size) decided and stored by a
        `BatchProcessor` on its own PostgreSQL connection with a lane's session settings, as a worker's
        lane runs it, but with no broker: the messages are made in memory and what the lane would publish
        is only checked (every verdict's `ok` against the job's expected outcome). For each batch size N
        (default 1,4,16,64,512), about J jobs (default 2048) in batches of N, one after the other, deciding
        on T threads as ATTEST_WORKERS (default: the cores; batches under 8 jobs on the lane's own thread).
        Measures per size: this process's CPU (the lane's thread and the deciding threads, from getrusage)
        per batch and per job, PostgreSQL's (--postgres-pid: the postmaster and its backends, from /proc)
        per job, and the batches' wall time p50; then a line through the sizes, the lane's CPU per job
        against 1 ÷ N by least squares (so each size weighs alike): its slope a fixed cost per batch, its
        intercept a cost per job; and, on one thread from its own CPU clock, the in-process verification
        CPU per job of the same jobs (parsed, decided against memory, serialized: `pipeline`'s in-process
        side), which the cost per job is divided by.
        Database: ATTEST_DATABASE_URL or --database-url (eval "$(ops/stack env)"; ops/bench --lane runs it
        with PostgreSQL at its default durability). The run's app and rows are deleted at the end.
        --stored-days D (at most 400) runs the lane in a schema of its own (dropped at the end) whose
        `verdicts` hold D day partitions before today's, each with R verdicts of another app (--stored-rows,
        default 5000, at most 10000000), then today's and 3 ahead empty and DEFAULT: a batch looks each new
        jobId up in all of them, as it does on a database that keeps D days (8 with
        ATTEST_VERDICT_RETENTION's default).
        --json prints one object: {"sizes": [{"size", "batches", "jobs", "workerCpuMsPerBatch",
        "workerCpuMsPerJob", "postgresCpuMsPerJob", "batchWallP50Ms"}], "fixedCpuMsPerBatch",
        "cpuMsPerJob", "inProcessCpuMsPerJob"}. Exit status 1 when a verdict disagreed with its job's
        expected outcome.
        """

    struct Options {
        var sizes = [1, 4, 16, 64, 512]
        var jobs = 2048
        var threads = ProcessInfo.processInfo.activeProcessorCount
        var postgresPid: Int32?
        var databaseURL: String
        /// Filled day partitions before today's (0: the database as it is).
        var storedDays = 0
        var storedRows = 5000

        init(_ args: inout Arguments) throws {
            databaseURL = try DatabaseOptions.url(&args)
            if let text = try args.option("sizes") {
                sizes = try text.split(separator: ",").map { try Arguments.wholeNumber(String($0), "sizes", min: 1) }
                guard !sizes.isEmpty else { throw Arguments.UsageError(description: "--sizes names no size") }
            }
            if let jobs = try args.integer("jobs", min: 1) { self.jobs = jobs }
            if let threads = try args.integer("threads", min: 1) { self.threads = threads }
            postgresPid = try PipelineBenchmark.Options.pid(&args, "postgres-pid")
            if let days = try args.integer("stored-days", min: 0) { storedDays = days }
            if let rows = try args.integer("stored-rows", min: 0) { storedRows = rows }
            guard storedDays <= 400 else { throw Arguments.UsageError(description: "--stored-days is at most 400") }
            guard storedRows <= 10_000_000 else { throw Arguments.UsageError(description: "--stored-rows is at most 10000000") }
        }
    }

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let options = try Options(&args)
        _ = try args.positionals(max: 0)
        let results = try measure(options)
        print(json ? results.json.serialized() : results.table)
        return results.unexpected == 0 ? 0 : 1
    }

    /// One batch size's measurements.
    struct SizeCost {
        let size: Int
        let batches: Int
        let jobs: Int
        let workerCpuSeconds: Double
        let postgresCpuSeconds: Double?
        let batchWallP50Ms: Double

        var workerCpuMsPerBatch: Double { workerCpuSeconds * 1000 / Double(batches) }
        var workerCpuMsPerJob: Double { workerCpuSeconds * 1000 / Double(jobs) }
        var postgresCpuMsPerJob: Double? { postgresCpuSeconds.map { $0 * 1000 / Double(jobs) } }
    }

    struct Results {
        let sizes: [SizeCost]
        let inProcessCpuMsPerJob: Double
        let unexpected: Int

        /// The lane's CPU per batch as a fixed part plus a part per job: the least-squares line of the CPU per
        /// job against 1 / size (its slope the fixed part, its intercept the part per job), so each size
        /// weighs alike instead of the largest batches deciding the fixed part.
        var line: (fixedMs: Double, perJobMs: Double) {
            let fit = LaneBenchmark.leastSquares(sizes.map { (1 / Double($0.size), $0.workerCpuMsPerJob) })
            return (fit.slope, fit.intercept)
        }

        var json: JSONValue {
            func ms(_ value: Double) -> JSONValue { .double((value * 10_000).rounded() / 10_000) }
            return .object([
                ("sizes", .array(sizes.map { s in
                    .object([
                        ("size", .int(Int64(s.size))), ("batches", .int(Int64(s.batches))), ("jobs", .int(Int64(s.jobs))),
                        ("workerCpuMsPerBatch", ms(s.workerCpuMsPerBatch)), ("workerCpuMsPerJob", ms(s.workerCpuMsPerJob)),
                        ("postgresCpuMsPerJob", s.postgresCpuMsPerJob.map(ms) ?? .null), ("batchWallP50Ms", ms(s.batchWallP50Ms)),
                    ])
                })),
                ("fixedCpuMsPerBatch", ms(line.fixedMs)), ("cpuMsPerJob", ms(line.perJobMs)),
                ("inProcessCpuMsPerJob", ms(inProcessCpuMsPerJob)),
            ])
        }

        var table: String {
            var lines = ["batch  batches   jobs   lane CPU/batch   lane CPU/job (÷ in-process)   PostgreSQL CPU/job   batch wall p50"]
            for s in sizes {
                let postgres = s.postgresCpuMsPerJob.map { String(format: "%8.3f ms", $0) } ?? "       n/a"
                lines.append(
                    String(format: "%5d  %7d  %5d  %12.3f ms  %12.3f ms (%5.2f×)", s.size, s.batches, s.jobs, s.workerCpuMsPerBatch,
                        s.workerCpuMsPerJob, s.workerCpuMsPerJob / inProcessCpuMsPerJob) + "        \(postgres)"
                        + String(format: "      %8.2f ms", s.batchWallP50Ms))
            }
            lines.append(String(format: "lane CPU per batch ≈ %.3f ms + %.4f ms × jobs", line.fixedMs, line.perJobMs))
            lines.append(String(format: "in-process verification CPU per job: %.4f ms (one thread)", inProcessCpuMsPerJob))
            lines.append("verdicts against their jobs' expected outcome: \(unexpected) unexpected")
            return lines.joined(separator: "\n")
        }
    }

    static func measure(_ options: Options) throws -> Results {
        let runId = String(UUID().uuidString.prefix(8)).lowercased()
        let bundleId = "bench.lane.\(runId)"
        let trust = try BenchTrust(packageName: "com.example.bench.l\(runId)")
        let schema = try options.storedDays > 0
            ? StoredVerdictsSchema(
                databaseURL: options.databaseURL, runId: runId, days: options.storedDays, rows: options.storedRows,
                now: trust.verifier.clock.now())
            : nil
        // The session settings a worker's lanes have (without them the partition being filled is scanned row
        // by row while the planner believes it small).
        let connection = PGReconnectingConnection.bench(
            options.databaseURL, settings: schema?.settings(AttestStore.sessionSettings) ?? AttestStore.sessionSettings)
        // Set before anything else can fail, so that no run leaves its schema or its app behind.
        defer {
            do {
                if let schema {
                    try schema.drop()
                } else {
                    try connection.run { c throws(PGError) in
                        try BenchRigStatements.RemoveApp.run(teamId: BenchRig.teamId, bundleId: bundleId, on: c)
                    }
                }
            } catch {
                let what = schema.map { "schema \($0.name)" } ?? "bundle \(bundleId)"
                FileHandle.standardError.write(Data("bench lane: could not delete the run's rows (\(what)): \(error)\n".utf8))
            }
        }
        if schema == nil {  // a schema of the run's own was migrated when made
            let migrations = try Migrator.bundled
            try connection.run { c throws(PGError) in _ = try Migrator.migrate(c, migrations: migrations) }
        }
        let store = AttestStore(connection: connection)
        try store.upsert(AppPolicy(teamId: BenchRig.teamId, bundleId: bundleId, environments: .production, android: trust.android.policy))
        let processor = BatchProcessor(
            verifier: trust.verifier, store: store, devices: DeviceCache(),
            settings: BatchProcessor.Settings(verdictsTopic: "bench.lane.verdicts", deadLetterTopic: "bench.lane.dead", threads: options.threads))
        let devices = max(1, (options.jobs + 9) / 10)
        var sizes = [SizeCost]()
        var unexpected = 0
        var inProcessSeconds = 0.0
        var inProcessJobs = 0
        for (n, size) in options.sizes.enumerated() {
            let workload = try PipelineWorkload.mint(
                pki: trust.pki, teamId: BenchRig.teamId, bundleId: bundleId, devices: devices, prefix: "\(runId)-\(n)",
                threads: options.threads, android: trust.android,
                androidDevices: PipelineWorkload.androidDevices(devices, share: 0.25))
            let receivedAt = trust.verifier.clock.now().rfc3339
            let messages = workload.jobs.enumerated().map { offset, job in
                KafkaMessage(
                    topic: "bench.lane.jobs", partition: 0, offset: Int64(offset), key: job.key, value: job.line(receivedAt: receivedAt),
                    headers: [], timestampMs: Int64(Date().timeIntervalSince1970 * 1000))
            }
            let (cost, wrong) = try run(messages, expected: workload.jobs.map(\.expectedOK), size: size, processor: processor, postgres: options.postgresPid)
            sizes.append(cost)
            unexpected += wrong
            let inProcess = workload.verifyInProcess(
                0..<workload.devices.count, verifier: trust.verifier, app: BenchTrust.appRules(trust.android), threads: 1)
            inProcessSeconds += inProcess.callerCPUSeconds
            inProcessJobs += inProcess.jobs
            unexpected += inProcess.unexpected
        }
        return Results(sizes: sizes, inProcessCpuMsPerJob: inProcessSeconds * 1000 / Double(inProcessJobs), unexpected: unexpected)
    }

    /// Runs `messages` through `processor` in batches of `size`, in order: the CPU it took and how many
    /// verdicts disagreed with `expected` (a verdict missing counts as one).
    private static func run(
        _ messages: [KafkaMessage], expected: [Bool], size: Int, processor: BatchProcessor, postgres: Int32?
    ) throws -> (SizeCost, Int) {
        var walls = [Double]()
        var unexpected = 0
        let postgresBefore = postgres.flatMap { ProcessCPU.seconds(tree: $0, in: ProcessCPU.readAll()) }
        let cpuBefore = processCPUSeconds()
        for start in stride(from: 0, to: messages.count, by: size) {
            let batch = Array(messages[start..<min(start + size, messages.count)])
            let began = ContinuousClock.now
            let outbound = try processor.process(batch)
            walls.append((ContinuousClock.now - began).timeInterval * 1000)
            var answered = Set<Int64>()
            for out in outbound {
                guard case .verdict = out.kind else { continue }
                answered.insert(out.sourceOffset)
                if VerdictCollector.accepts(out.value) != expected[Int(out.sourceOffset)] { unexpected += 1 }
            }
            unexpected += batch.count - answered.count
        }
        let cpu = processCPUSeconds() - cpuBefore
        let postgresAfter = postgres.flatMap { ProcessCPU.seconds(tree: $0, in: ProcessCPU.readAll()) }
        walls.sort()
        let cost = SizeCost(
            size: size, batches: walls.count, jobs: messages.count, workerCpuSeconds: cpu,
            postgresCpuSeconds: PhaseCost.difference(postgresBefore, postgresAfter), batchWallP50Ms: PipelineBenchmark.percentile(walls, 0.5))
        return (cost, unexpected)
    }

    /// The least-squares line through `points` (x, y): y ≈ intercept + slope × x; a single x gives slope 0.
    static func leastSquares(_ points: [(Double, Double)]) -> (intercept: Double, slope: Double) {
        let n = Double(points.count)
        guard n > 0 else { return (0, 0) }
        let meanX = points.reduce(0) { $0 + $1.0 } / n
        let meanY = points.reduce(0) { $0 + $1.1 } / n
        let sxx = points.reduce(0) { $0 + ($1.0 - meanX) * ($1.0 - meanX) }
        let sxy = points.reduce(0) { $0 + ($1.0 - meanX) * ($1.1 - meanY) }
        let slope = sxx > 0 ? sxy / sxx : 0
        return (meanY - slope * meanX, slope)
    }

    /// This process's CPU seconds, every thread (user and system).
    private static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    private static func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
}
