import AttestCLI
import AttestCore
import AttestJobs
import AttestMint
import AttestVerifier
import Dispatch
import Foundation
import KafkaClient
import PostgresClient
import Worker

/// `attest-bench pipeline`: the worker end to end on a real broker and PostgreSQL (a child
/// `attest-worker run`), next to the in-process verification rate of the same jobs
/// measured in the same run, with every job checked for loss and double decisions.
struct PipelineBenchmark: Subcommand {
    static let help = """
        usage: attest-bench pipeline [--json] [--devices N] [--android-share F] [--latency-seconds S] [--idle-seconds S] [--threads T]
                                     [--batch-size B] [--batch-lanes L] [--topics PREFIX] [--brokers HOST:PORT]
                                     [--database-url URL] [--worker PATH] [--rate R] [--fetch-wait-ms W]
                                     [--producer-linger-ms L]
                                     [--postgres-pid PID] [--broker-pid PID]
                                     [--receipt-refresh-delay-seconds S | --receipt-refresh-dead]
                                     [--worker-log PATH] [--worker-log-level L] [--worker-kafka-properties P]

        Mints N devices (default 10000) under a fresh test PKI, each with one attestation then nine
        assertions (10% / 90%), one invalid assertion on every other device (5% of all jobs). A share F of
        the devices (0 to 1, default 0.25; every phase's stream alike) are Android devices under a fresh
        Android test PKI, spread evenly among the others, with the same counts: one key attestation then
        nine signed requests, one invalid request on every other device (signed by another key, or its
        client data without the challenge it presents). Registers a fresh app with its Android package
        com.example.bench.r<random>; creates the topics PREFIX.jobs, PREFIX.verdicts and PREFIX.dead (default PREFIX
        bench.<random>; deleted at the end); starts `attest-worker run` with T verification threads
        (default: the cores), trusting both test PKIs (ATTEST_TRUST_ANCHORS, ATTEST_ANDROID_TRUST_ANCHORS),
        the worker's defaults otherwise but ATTEST_BATCH_SIZE=B and ATTEST_BATCH_LANES=L when given. Measures:
          in-process  the jobs verified in this process on T threads (read the record as the worker does,
                      either platform; decide against device state kept in memory: the attested key and
                      counter, or the attested Android key; serialize the verdict): no broker, no database; half of the devices
                      before the pipeline phases, half after;
          throughput  every job produced at once, keyed by keyId: jobs / (last verdict − first produce);
          latency     fresh devices' jobs, same mix, produced evenly at half that rate (R jobs/s with
                      --rate) for S seconds (default 10): p50 and p99 of verdict consumed − job produced,
                      split at the verdict's create time (the worker hands it to its producer after storing
                      it): job → verdict (broker, buffer, deciding, storing), of it the job's own
                      produce (handed over → the broker's acknowledgement), and the verdict's trip
                      (publishing, the reader's fetch); and the worker's own stages from its
                      attest_job_stage_seconds histogram, scraped before and after the phase, as the
                      bucket bounds of p50 and p99: broker (created → consumed), buffer (consumed → batch
                      start), reading (the batch's reads), deciding (the rest of the batch), storing (its
                      commit), publish (verdict produced → acknowledged).
          cost        over the throughput phase, per job: CPU time of the worker, of PostgreSQL (the
                      postmaster PID and its backends), of the broker (PID) and of this process (its
                      producer and verdict reader), from /proc; the in-process CPU per job as a share of
                      all four (with everything on the in-process side's cores, the most end to end / in-
                      process can be); the same three CPU figures per job of the latency phase (smaller
                      batches: more of each batch's fixed cost per job); in both phases the worker's CPU
                      per job by its threads' role (/proc/PID/task: lanes, deciding, consumer, publisher,
                      librdkafka, other); the WAL bytes written; and over every phase, rows inserted, updated
                      and deleted in the user tables.
          analyze     after the warm-up, ANALYZE of the database, so that the worker's statements are
                      planned on statistics of tables holding rows (not on those of tables the last run
                      emptied).
          vacuum      after the throughput phase, VACUUM (ANALYZE) of the database, PostgreSQL's CPU
                      per throughput job (the phase's dead rows and statistics; autovacuum would
                      otherwise wake in the phases after and charge their few jobs for it).
          idle        between the throughput and latency phases, S seconds (--idle-seconds S, default
                      5; 0: none) with no job in flight: the worker's, PostgreSQL's and the broker's CPU
                      per second, what they spend whatever the rate (consumers fetching at their fetch
                      wait, background work such as autovacuum after the throughput phase); at R jobs/s,
                      R jobs share each second of it.
          requests    over the latency phase, per job: the requests each client sent the broker, by
                      request (this process's job producer and verdict reader from their librdkafka
                      statistics, the worker's consumer and producer from its attest_kafka_requests_total;
                      every client reports each second, so the closing reading waits a second after the
                      last verdict), and the broker's CPU per request.
        --fetch-wait-ms W sets fetch.wait.max.ms of the worker's and the verdict reader's consumers (the
        reader's is 10 ms otherwise, the worker's as ATTEST_KAFKA_PROPERTIES has it). --producer-linger-ms L
        sets linger.ms of the job producer (1 otherwise; librdkafka's default is 5), the backends' side.
        --worker-log PATH keeps the worker's log (its stderr: JSON lines at --worker-log-level L, warning
        by default, and librdkafka's own lines) at PATH when the run ends; --worker-kafka-properties P is
        appended to the worker's ATTEST_KAFKA_PROPERTIES only (e.g. debug=fetch: librdkafka logs every
        fetch with its time), so a stall can be traced after the run.
        --receipt-refresh-delay-seconds S turns receipt refresh on against `attest-bench apple-stand-in`
        (a child on a free loopback port) answering every device after S seconds (at most 25);
        --receipt-refresh-dead against a closed loopback port. The worker gets a fresh DeviceCheck key for
        the bench's team, rounds every 200 ms and ATTEST_RECEIPT_REFRESH_PER_MINUTE=60000, so the refresher
        waits on the endpoint the whole run; reported: the refresh tries by outcome
        (attest_receipt_refreshes_total at the end of the latency phase) and the devices leased then.
        Then checks every job of both phases against the verdicts topic and PostgreSQL: lost (no verdict
        published or none stored), decided twice (two different verdicts published, or the published one
        is not the stored one), and that each verdict accepts exactly the jobs minted valid.

        The run's app, devices and verdicts are deleted from the database afterwards.
        Brokers, database and client settings: ATTEST_KAFKA_BROKERS, ATTEST_DATABASE_URL and
        ATTEST_KAFKA_PROPERTIES (eval "$(ops/stack env)"). The worker is PATH, by default the attest-worker
        beside this executable (both products of one `swift build`). Progress goes to stderr. Exit status 1 when a
        job was lost, decided twice or decided against its expected outcome.
        --json prints one object: {"jobs", "androidShare", "androidJobs", "jobsPerSec", "coreJobsPerSec", "p50Ms", "p99Ms", "lost",
        "duplicates", "latencyRate", "toVerdictP50Ms", "toVerdictP99Ms", "producingP50Ms", "producingP99Ms", "verdictTripP50Ms",
        "verdictTripP99Ms", "stagesMs", "workerCpuMsPerJob", "postgresCpuMsPerJob", "brokerCpuMsPerJob",
        "benchCpuMsPerJob", "verificationShareOfCpu", "latencyPhaseCpuMsPerJob": {"worker",
        "postgres", "broker"}, "workerThreadsCpuMsPerJob": {"throughput", "latency"}, "vacuumPostgresCpuMsPerJob", "idleCpuMsPerSec": {"worker", "postgres", "broker"} (null without an idle window), "latencyRequestsPerJob": {client: {request: per job}}, "brokerCpuMsPerRequest",
        "walBytesPerJob", "rowsPerJob", "receiptRefresh", "refreshes", "refreshesInFlight"}; receiptRefresh is
        "off", "slow" or "dead", refreshes an object by outcome and refreshesInFlight a count (both null when
        off); jobs is the throughput phase's count, androidShare the share of devices that are Android ones
        and androidJobs the throughput phase's Android jobs; lost and duplicates cover
        both phases; a CPU figure is null when its PID was not given or the process restarted.
        """

    /// What the command line chose.
    struct Options {
        var devices = 10_000
        /// The share of devices that are Android devices (`--android-share`).
        var androidShare = 0.25
        var latencySeconds = 10.0
        /// The idle window's length (`--idle-seconds`); 0: none.
        var idleSeconds = 5.0
        /// The latency phase's rate, jobs/s; nil: half the measured throughput.
        var rate: Double?
        var postgresPid: Int32?
        var brokerPid: Int32?
        /// Receipt refresh against this endpoint; nil: off.
        var receiptRefresh: ReceiptRefreshBench.Endpoint?
        var rig: BenchRig.Options

        init(_ args: inout Arguments) throws {
            rig = try BenchRig.Options(&args)
            if let devices = try args.integer("devices", min: 2) { self.devices = devices }
            if let share = try args.option("android-share") {
                guard let value = Double(share), value >= 0, value <= 1 else {
                    throw Arguments.UsageError(description: "--android-share must be a number from 0 to 1")
                }
                androidShare = value
            }
            if let seconds = try args.integer("latency-seconds", min: 1) { latencySeconds = Double(seconds) }
            if let seconds = try args.integer("idle-seconds", min: 0) { idleSeconds = Double(seconds) }
            if let rate = try args.integer("rate", min: 1) { self.rate = Double(rate) }
            postgresPid = try Self.pid(&args, "postgres-pid")
            brokerPid = try Self.pid(&args, "broker-pid")
            receiptRefresh = try ReceiptRefreshBench.Endpoint.parse(&args)
        }

        static func pid(_ args: inout Arguments, _ name: String) throws -> Int32? {
            guard let value = try args.integer(name, min: 1) else { return nil }
            guard let pid = Int32(exactly: value) else { throw Arguments.UsageError(description: "--\(name) is not a PID") }
            return pid
        }
    }

    struct Results {
        var devices: Int
        /// The share of devices that are Android devices, and the throughput phase's Android jobs.
        var androidShare: Double
        var androidJobs: Int
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
        var stages: LatencyStages
        /// The worker's own stage histograms over the latency phase.
        var workerStages: StageHistogram
        /// The throughput phase's cost, and rows written over every phase with the jobs of every phase.
        var cost: PhaseCost
        /// The latency phase's cost: its batches are smaller than the throughput phase's, so each job
        /// carries more of a batch's fixed costs.
        var latencyCost: PhaseCost
        /// The requests every client sent the broker over the latency phase (and the second after it).
        var latencyRequests: BrokerRequestTally
        /// The VACUUM (ANALYZE) after the throughput phase, charged to its jobs.
        var vacuumCost: PhaseCost
        /// The idle window's cost and length; nil when there was none.
        var idleCost: PhaseCost?
        var idleSeconds: Double
        var rowsWritten: Int64
        var allJobs: Int
        var lost: Int
        var duplicates: Int
        /// Identical verdicts published again for a job (a redelivered job republishes its stored verdict).
        var copies: Int
        /// Verdicts whose acceptance differs from how the job was minted.
        var unexpected: Int
        var receiptRefresh: ReceiptRefreshBench.Endpoint?
        /// Refresh tries by outcome, and devices leased, at the end of the latency phase; nil when off.
        var refreshes: [String: Int]?
        var refreshesInFlight: Int?

        var passed: Bool { lost == 0 && duplicates == 0 && unexpected == 0 }

        var json: JSONValue {
            let members: [(String, JSONValue)] = [
                ("jobs", .int(Int64(jobs))), ("androidShare", .double((androidShare * 1000).rounded() / 1000)),
                ("androidJobs", .int(Int64(androidJobs))), ("jobsPerSec", .int(Int64(jobsPerSec.rounded()))),
                ("coreJobsPerSec", .int(Int64(coreJobsPerSec.rounded()))), ("p50Ms", .double(Self.tenths(p50Ms))),
                ("p99Ms", .double(Self.tenths(p99Ms))), ("lost", .int(Int64(lost))),
                ("duplicates", .int(Int64(duplicates))), ("latencyRate", .int(Int64(latencyRate.rounded()))),
                ("toVerdictP50Ms", .double(PipelineBenchmark.percentile(stages.toVerdictMs, 0.50))),
                ("toVerdictP99Ms", .double(PipelineBenchmark.percentile(stages.toVerdictMs, 0.99))),
                ("producingP50Ms", .double(PipelineBenchmark.percentile(stages.producingMs, 0.50))),
                ("producingP99Ms", .double(PipelineBenchmark.percentile(stages.producingMs, 0.99))),
                ("verdictTripP50Ms", .double(PipelineBenchmark.percentile(stages.verdictTripMs, 0.50))),
                ("verdictTripP99Ms", .double(PipelineBenchmark.percentile(stages.verdictTripMs, 0.99))),
                ("stagesMs", .object(StageHistogram.order.map { stage -> (String, JSONValue) in
                    (stage, .object([("p50", bound(stage, 0.50)), ("p99", bound(stage, 0.99))]))
                })),
                ("workerCpuMsPerJob", perJob(cost.workerSeconds)), ("postgresCpuMsPerJob", perJob(cost.postgresSeconds)),
                ("brokerCpuMsPerJob", perJob(cost.brokerSeconds)), ("benchCpuMsPerJob", perJob(cost.benchSeconds)),
                ("verificationShareOfCpu", verificationShare.map { .double(($0 * 100).rounded() / 100) } ?? .null),
                ("latencyPhaseCpuMsPerJob", .object([
                    ("worker", perJob(latencyCost.workerSeconds, latencyJobs)), ("postgres", perJob(latencyCost.postgresSeconds, latencyJobs)),
                    ("broker", perJob(latencyCost.brokerSeconds, latencyJobs)),
                ])),
                ("workerThreadsCpuMsPerJob", .object([
                    ("throughput", byRole(cost.workerThreadSeconds)), ("latency", byRole(latencyCost.workerThreadSeconds, latencyJobs)),
                ])),
                ("vacuumPostgresCpuMsPerJob", perJob(vacuumCost.postgresSeconds)),
                ("idleCpuMsPerSec", idleCost.map { idle in
                    .object([("worker", idle.workerSeconds), ("postgres", idle.postgresSeconds), ("broker", idle.brokerSeconds)].map { name, seconds in
                        (name, seconds.map { .double(($0 * 1000 / idleSeconds * 10).rounded() / 10) } ?? .null)
                    })
                } ?? .null),
                ("latencyRequestsPerJob", .object(latencyRequests.clients.sorted { $0.key < $1.key }.map { client, requests in
                    (client, .object(requests.counts.sorted { $0.key < $1.key }.map { name, count in
                        (name, .double((Double(count) / Double(max(1, latencyJobs)) * 1000).rounded() / 1000))
                    }))
                })),
                ("brokerCpuMsPerRequest", latencyCost.brokerSeconds.map {
                    .double(($0 * 1000 / Double(max(1, latencyRequests.total)) * 1000).rounded() / 1000)
                } ?? .null),
                ("walBytesPerJob", .int(Int64((Double(cost.walBytes) / Double(max(1, jobs))).rounded()))),
                ("rowsPerJob", .double((Double(rowsWritten) / Double(max(1, allJobs)) * 100).rounded() / 100)),
            ]
            return .object(members + refreshMembers)
        }

        private var refreshMembers: [(String, JSONValue)] {
            let mode: String
            switch receiptRefresh {
            case nil: mode = "off"
            case .slow?: mode = "slow"
            case .dead?: mode = "dead"
            }
            let counts: JSONValue = refreshes.map { counts in
                .object(counts.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.int(Int64($0.value))) })
            } ?? .null
            return [("receiptRefresh", .string(mode)), ("refreshes", counts), ("refreshesInFlight", refreshesInFlight.map { .int(Int64($0)) } ?? .null)]
        }

        private func bound(_ stage: String, _ p: Double) -> JSONValue {
            workerStages.quantileMs(stage, p).map(JSONValue.double) ?? .null
        }

        /// CPU seconds of a phase as milliseconds per job of it (the throughput phase's unless told), to the
        /// microsecond (PostgreSQL's 0.05 ms a job to the hundredth would hide a 10% step); null when not measured.
        /// Seconds as milliseconds per job of `count` jobs (the throughput phase's by default).
        private func msPerJob(_ seconds: Double, _ count: Int?) -> Double { seconds * 1000 / Double(max(1, count ?? jobs)) }

        private func perJob(_ seconds: Double?, _ count: Int? = nil) -> JSONValue {
            seconds.map { .double((msPerJob($0, count) * 1000).rounded() / 1000) } ?? .null
        }

        /// In-process CPU per job (its threads over its rate) ÷ the CPU every process of the throughput phase
        /// spent per job: with all of them on the cores the in-process side had to itself, the most the end
        /// to end rate can reach as a share of the in-process one. nil when a process was not measured.
        var verificationShare: Double? {
            guard let worker = cost.workerSeconds, let postgres = cost.postgresSeconds, let broker = cost.brokerSeconds,
                let bench = cost.benchSeconds, coreJobsPerSec > 0
            else { return nil }
            let spent = (worker + postgres + broker + bench) / Double(max(1, jobs))
            return spent > 0 ? Double(threads) / coreJobsPerSec / spent : nil
        }

        /// The worker's CPU per job by thread role, in ``WorkerThreadsCPU/Role`` order; null when not measured.
        private func byRole(_ seconds: [WorkerThreadsCPU.Role: Double]?, _ count: Int? = nil) -> JSONValue {
            seconds.map { seconds in .object(WorkerThreadsCPU.Role.allCases.map { ($0.rawValue, perJob(seconds[$0] ?? 0, count)) }) } ?? .null
        }

        private func roleText(_ seconds: [WorkerThreadsCPU.Role: Double]?, _ count: Int? = nil) -> String {
            guard let seconds else { return "       — (no PID)" }
            return WorkerThreadsCPU.Role.allCases.map { role in
                "\(role.rawValue) " + String(format: "%.3f", msPerJob(seconds[role] ?? 0, count))
            }.joined(separator: ", ") + " ms/job"
        }

        private func cpuText(_ seconds: Double?, _ count: Int? = nil) -> String {
            seconds.map { String(format: "%8.3f ms/job", msPerJob($0, count)) } ?? "       — (no PID)"
        }

        private static func tenths(_ ms: Double) -> Double { (ms * 10).rounded() / 10 }

        /// CPU seconds of the idle window as milliseconds per second, and per job at the latency phase's rate.
        private func idleText(_ seconds: Double?) -> String {
            guard idleCost != nil else { return "       — (no idle window)" }
            guard let seconds else { return "       — (no PID)" }
            let perSecond = seconds * 1000 / idleSeconds
            return String(format: "%8.1f ms/s (%.3f ms/job at %.0f jobs/s)", perSecond, perSecond / max(1, latencyRate), latencyRate)
        }

        var table: String {
            func row(_ name: String, _ value: String) -> String {
                name.padding(toLength: 44, withPad: " ", startingAt: 0) + value
            }
            let phases: [String] = [
                "\(jobs) jobs over \(devices) devices (10% attestations, 5% invalid), \(threads) threads, "
                    + "PostgreSQL \(durability)",
                row("Android share of devices", String(format: "%8.0f %%", androidShare * 100) + " (\(androidJobs) Android jobs)"),
                row("end to end, sustained", String(format: "%8.0f jobs/s", jobsPerSec)),
                row("in-process verification, \(threads) threads", String(format: "%8.0f jobs/s", coreJobsPerSec)),
                row("end to end / in-process", String(format: "%8.2f", jobsPerSec / coreJobsPerSec)),
                row(String(format: "latency at %.0f jobs/s (%d jobs)", latencyRate, latencyJobs),
                    String(format: "p50 %.1f ms, p99 %.1f ms", p50Ms, p99Ms)),
                row("  job → verdict handed to producer",
                    String(format: "p50 %.0f ms, p99 %.0f ms", PipelineBenchmark.percentile(stages.toVerdictMs, 0.50),
                        PipelineBenchmark.percentile(stages.toVerdictMs, 0.99))),
                row("    of it, job produced (acknowledged)",
                    String(format: "p50 %.0f ms, p99 %.0f ms", PipelineBenchmark.percentile(stages.producingMs, 0.50),
                        PipelineBenchmark.percentile(stages.producingMs, 0.99))),
                row("  verdict publish and trip to the reader",
                    String(format: "p50 %.0f ms, p99 %.0f ms", PipelineBenchmark.percentile(stages.verdictTripMs, 0.50),
                        PipelineBenchmark.percentile(stages.verdictTripMs, 0.99))),
                row("  worker's stages (bucket bounds, ms)", StageHistogram.order.map { stage in
                    "\(stage) \(workerStages.quantileMs(stage, 0.50).map { String(format: "%g", $0) } ?? "?")/"
                        + "\(workerStages.quantileMs(stage, 0.99).map { String(format: "%g", $0) } ?? "?")"
                }.joined(separator: ", ") + " (p50/p99)"),
                row("CPU, worker (throughput phase)", cpuText(cost.workerSeconds)),
                row("  by its threads", roleText(cost.workerThreadSeconds)),
                row("CPU, PostgreSQL", cpuText(cost.postgresSeconds)),
                row("CPU, broker", cpuText(cost.brokerSeconds)),
                row("CPU, the benchmark's producer and reader", cpuText(cost.benchSeconds)),
                row("in-process CPU / all CPU, per job", verificationShare.map { String(format: "%8.2f", $0) } ?? "       —"),
                row("CPU, latency phase: worker", cpuText(latencyCost.workerSeconds, latencyJobs)),
                row("    by its threads", roleText(latencyCost.workerThreadSeconds, latencyJobs)),
                row("  PostgreSQL", cpuText(latencyCost.postgresSeconds, latencyJobs)),
                row("  broker", cpuText(latencyCost.brokerSeconds, latencyJobs)),
                row("  PostgreSQL's VACUUM after the phase", cpuText(vacuumCost.postgresSeconds)),
                row("CPU, idle: worker", idleText(idleCost?.workerSeconds)),
                row("  PostgreSQL", idleText(idleCost?.postgresSeconds)),
                row("  broker", idleText(idleCost?.brokerSeconds)),
                row("broker requests, latency phase", String(format: "%8.2f per job", Double(latencyRequests.total) / Double(max(1, latencyJobs)))),
            ]
            let requests: [String] = latencyRequests.rows.prefix(6).map { entry in
                row("  \(entry.client) \(entry.request)", String(format: "%8.2f per job", Double(entry.count) / Double(max(1, latencyJobs))))
            }
            let rest: [String] = [
                row("  broker CPU per request", latencyCost.brokerSeconds.map {
                    String(format: "%8.3f ms", $0 * 1000 / Double(max(1, latencyRequests.total)))
                } ?? "       —"),
                row("WAL", String(format: "%8.0f bytes/job", Double(cost.walBytes) / Double(max(1, jobs)))),
                row("rows inserted/updated/deleted (all phases)", String(format: "%8.2f rows/job", Double(rowsWritten) / Double(max(1, allJobs)))),
                row("receipt refresh", receiptRefresh?.text ?? "off"),
                row("  refresh tries (by outcome), devices leased", refreshes.map { counts in
                    "\(counts.values.reduce(0, +)) (" + counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                        + "), \(refreshesInFlight ?? 0) leased"
                } ?? "—"),
                row("lost", "\(lost)"),
                row("decided twice", "\(duplicates)"),
                row("identical verdicts republished", "\(copies)"),
                row("verdicts against expectation", "\(unexpected)"),
            ]
            return (phases + requests + rest).joined(separator: "\n")
        }
    }

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let options = try Options(&args)
        _ = try args.positionals(max: 0)
        let results = try PipelineBenchmark(options: options).run()
        print(json ? results.json.serialized() : results.table)
        return results.passed ? 0 : 1
    }

    let options: Options

    /// Progress, on stderr.
    private static func note(_ text: String) {
        FileHandle.standardError.write(Data("bench pipeline: \(text)\n".utf8))
    }

    func run() throws -> Results {
        let rig = try BenchRig(options: options.rig)
        defer { rig.close() }
        let threads = options.rig.threads
        func mint(_ devices: Int, _ phase: String) throws -> PipelineWorkload {
            let start = Date()
            let workload = try PipelineWorkload.mint(
                pki: rig.pki, teamId: BenchRig.teamId, bundleId: rig.bundleId, devices: devices, prefix: "\(rig.runId)-\(phase)",
                threads: ProcessInfo.processInfo.activeProcessorCount, android: rig.android,
                androidDevices: PipelineWorkload.androidDevices(devices, share: options.androidShare))
            Self.note(String(
                format: "minted %d jobs for %d devices in %.1f s", workload.jobs.count, devices, Date().timeIntervalSince(start)))
            return workload
        }
        // Minted right before the run, so every receivedAt is fresh.
        let warmUp = try mint(8, "w")
        let stream = try mint(options.devices, "t")

        // In-process verification of the same jobs: half of the devices now, half after the pipeline
        // phases, so that a change in the machine's load weighs on both sides of the ratio.
        let halves = [0..<(stream.devices.count / 2), (stream.devices.count / 2)..<stream.devices.count]
        func verifyInProcess(_ half: Int) throws -> (jobs: Int, seconds: Double) {
            let result = stream.verifyInProcess(halves[half], verifier: rig.verifier, app: rig.appRules, threads: threads)
            guard result.unexpected == 0 else {
                throw BenchmarkFailure("in-process verification: \(result.unexpected) verdicts against expectation")
            }
            Self.note(String(
                format: "in-process, half %d: %.0f jobs/s on %d threads", half + 1, Double(result.jobs) / result.seconds, threads))
            return (result.jobs, result.seconds)
        }
        let firstHalf = try verifyInProcess(0)

        let rowsBefore = try rig.connection.run { c throws(PGError) in try c.execute(DatabaseCost.RowsWritten()) }
        let endpoint = try options.receiptRefresh.map { try ReceiptRefreshBench.Running($0, pki: rig.pki, teamId: BenchRig.teamId) }
        defer { endpoint?.stop() }
        if let endpoint { Self.note("receipt refresh \(endpoint.endpoint.text), port \(endpoint.port)") }
        let live = try rig.start(extraEnvironment: endpoint?.workerEnvironment(teamId: BenchRig.teamId) ?? [:])
        let processes = PhaseCost.Processes(worker: live.worker.pid, postgres: options.postgresPid, broker: options.brokerPid)
        let pipeline = Pipeline(producer: live.producer, verdicts: live.verdicts, worker: live.worker)
        // Warm-up: the worker and the reader have joined their groups once these have verdicts.
        _ = try pipeline.produceAtOnce(warmUp, phase: "warm-up", stallSeconds: 60)
        // The statistics of tables holding rows, not of the tables the last run's clean-up emptied: the worker
        // prepares its statements once, and its plans made on tables analyzed empty are a fresh database's,
        // not one in service (docs/SCALING.md, "0.9.14" and "0.9.15").
        Self.note("analyze: ANALYZE after the warm-up")
        _ = try rig.connection.run { c throws(PGError) in try c.execute("ANALYZE") }
        Self.note("throughput: producing \(stream.jobs.count) jobs")
        let before = try PhaseCost.Reading.now(processes, connection: rig.connection)
        let jobsPerSec = try pipeline.produceAtOnce(stream, phase: "throughput phase", stallSeconds: 30)
        let cost = try PhaseCost.since(before, processes, connection: rig.connection)
        Self.note(String(format: "throughput: %.0f jobs/s end to end", jobsPerSec))
        // The throughput phase's dead rows and statistics dealt with now, at its cost, so that autovacuum does
        // not wake in the middle of the phases after and charge their few jobs for it.
        Self.note("vacuum: VACUUM (ANALYZE) after the throughput phase")
        let vacuumCost = try PhaseCost.during(processes, connection: rig.connection) { () throws(PGError) in
            _ = try rig.connection.run { c throws(PGError) in try c.execute("VACUUM (ANALYZE)") }
        }
        let rate = options.rate ?? jobsPerSec / 2
        let paced = try mint(max(1, Int((rate * options.latencySeconds).rounded(.up)) / 10), "l")
        // Nothing in flight: what each process spends whatever the rate.
        let idleCost = try options.idleSeconds > 0 ? PhaseCost.over(seconds: options.idleSeconds, processes, connection: rig.connection) : nil
        Self.note(String(format: "latency: producing %d jobs at %.0f jobs/s", paced.jobs.count, rate))
        let opening = try WorkerScrape.metrics(port: live.opsPort)
        let requestsBefore = pipeline.requests(workerExposition: opening)
        let latencyBefore = try PhaseCost.Reading.now(processes, connection: rig.connection)
        let (latencies, stages) = try pipeline.producePaced(paced, rate: rate)
        let latencyCost = try PhaseCost.since(latencyBefore, processes, connection: rig.connection)
        // Every client's next statistics postdate the phase (no job is in flight meanwhile).
        Thread.sleep(forTimeInterval: Double(BrokerRequestTally.statisticsIntervalMs) * 1.2 / 1000)
        let exposition = try WorkerScrape.metrics(port: live.opsPort)
        let workerStages = StageHistogram(exposition: exposition).since(StageHistogram(exposition: opening))
        let latencyRequests = pipeline.requests(workerExposition: exposition).since(requestsBefore)
        let refreshes = endpoint.map { _ in ReceiptRefreshBench.refreshes(exposition: exposition) }
        let inFlight = try endpoint.map { _ in
            Int(try rig.connection.run { c throws(PGError) in try c.execute(ReceiptRefreshBench.InFlight()) }.leased)
        }

        // Stop the worker in order (a redelivery while it leaves would publish again), then check every job.
        live.worker.stop(seconds: 30)
        let secondHalf = try verifyInProcess(1)
        // After the worker has stopped: its backends have reported their counts as they exited.
        let rowsAfter = try rig.connection.run { c throws(PGError) in try c.execute(DatabaseCost.RowsWritten()) }
        let check = BenchRig.check(
            (warmUp.jobs + stream.jobs + paced.jobs).map { ($0.jobId, $0.expectedOK) }, published: live.verdicts.records,
            stored: try rig.storedVerdicts())
        return Results(
            devices: options.devices, androidShare: options.androidShare,
            androidJobs: stream.jobs.count { $0.android }, threads: threads, durability: live.durability, jobs: stream.jobs.count,
            jobsPerSec: jobsPerSec,
            coreJobsPerSec: Double(firstHalf.jobs + secondHalf.jobs) / (firstHalf.seconds + secondHalf.seconds),
            latencyRate: rate, latencyJobs: paced.jobs.count, p50Ms: Self.percentile(latencies, 0.50),
            p99Ms: Self.percentile(latencies, 0.99), stages: stages, workerStages: workerStages, cost: cost, latencyCost: latencyCost,
            latencyRequests: latencyRequests, vacuumCost: vacuumCost, idleCost: idleCost, idleSeconds: options.idleSeconds, rowsWritten: rowsAfter.total &- rowsBefore.total,
            allJobs: warmUp.jobs.count + stream.jobs.count + paced.jobs.count, lost: check.lost, duplicates: check.duplicates, copies: check.copies,
            unexpected: check.unexpected, receiptRefresh: options.receiptRefresh, refreshes: refreshes, refreshesInFlight: inFlight)
    }

    /// The running pipeline as the phases drive it: jobs in, verdicts out.
    private struct Pipeline {
        let producer: JobProducer
        let verdicts: VerdictCollector
        let worker: WorkerProcess

        /// What the benchmark's clients and the worker (from its /metrics `exposition`) have sent the broker.
        func requests(workerExposition exposition: String) -> BrokerRequestTally {
            BrokerRequestTally(producer: producer.requests, reader: verdicts.requests, workerExposition: exposition)
        }

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

        /// Produces the jobs evenly spaced at `rate` per second and waits for their verdicts (``PacedProduction``).
        func producePaced(_ workload: PipelineWorkload, rate: Double) throws -> ([Double], LatencyStages) {
            try PacedProduction.run(workload.jobs, rate: rate, producer: producer, reader: verdicts) {
                try settle("latency phase", stallSeconds: 30)
            }
        }

        /// Waits for the announced verdicts; fails when the worker is gone, notes jobs still without one.
        private func settle(_ phase: String, stallSeconds: Double) throws {
            let missing = verdicts.wait(stallSeconds: stallSeconds)
            guard worker.isRunning else { throw BenchmarkFailure("the worker exited during the \(phase):\n\(worker.logTail())") }
            if missing > 0 {
                PipelineBenchmark.note("\(phase): \(missing) jobs still without a verdict after \(Int(stallSeconds)) s idle")
            }
        }
    }

    /// The nearest-rank percentile of sorted values; 0 for none.
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1)]
    }
}
