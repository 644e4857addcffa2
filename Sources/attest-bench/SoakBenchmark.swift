import AttestCLI
import AttestCore
import AttestJobs
import Foundation

/// `attest-bench soak`: a steady load on the worker for minutes, sampling its memory, the backlog of
/// jobs without a verdict and its warnings, then checking every job like `attest-bench pipeline` does.
struct SoakBenchmark: Subcommand {
    static let help = """
        usage: attest-bench soak [--json] [--minutes N] [--rate R] [--devices D] [--sample-seconds S]
                                 [--threads T] [--batch-size B] [--batch-lanes L] [--topics PREFIX] [--brokers HOST:PORT]
                                 [--database-url URL] [--worker PATH] [--worker-log PATH]
                                 [--worker-log-level L] [--worker-kafka-properties P]

        Registers a fresh app, starts `attest-worker run` (as pipeline does), attests D devices
        (default 2000), then produces assertions round the pool at R jobs/s (default 500; one in twenty
        replays a counter) for N minutes (default 10). Every S seconds (default 10) it samples the worker's
        resident memory, the backlog (jobs produced without a verdict yet) and the worker's warning and
        error log lines. Afterwards every job is checked against the verdicts topic and PostgreSQL (lost,
        decided twice, against expectation).

        The pool is fixed, so the worker's legitimate state stops growing once every device is cached:
        memory is flat when the last sample exceeds the one at a fifth of the run by at most 10% (or 16 MiB).
        Exit status 1 when memory grew, the backlog did not drain, or a job was lost, decided twice or
        decided against expectation. --json prints one object: {"minutes", "rate", "samples": [{"seconds",
        "rssMiB", "backlog", "verdicts", "warnings"}], "rssStartMiB", "rssEndMiB", "growthMiB", "flat",
        "lost", "duplicates", "unexpected"}. Brokers, database, worker and its log as for pipeline.
        """

    struct Sample {
        var seconds: Double
        var rssMiB: Double
        var backlog: Int
        var verdicts: Int
        var warnings: Int

        var json: JSONValue {
            .object([
                ("seconds", .int(Int64(seconds.rounded()))), ("rssMiB", .double((rssMiB * 10).rounded() / 10)),
                ("backlog", .int(Int64(backlog))), ("verdicts", .int(Int64(verdicts))), ("warnings", .int(Int64(warnings))),
            ])
        }
    }

    struct Results {
        var minutes: Int
        var rate: Int
        var devices: Int
        var samples: [Sample]
        var rssStartMiB: Double
        var rssEndMiB: Double
        var lost: Int
        var duplicates: Int
        var unexpected: Int

        var growthMiB: Double { rssEndMiB - rssStartMiB }
        var flat: Bool { growthMiB <= max(rssStartMiB * 0.10, 16) }
        var drained: Bool { samples.last?.backlog == 0 }
        var passed: Bool { flat && drained && lost == 0 && duplicates == 0 && unexpected == 0 }

        var json: JSONValue {
            func mib(_ value: Double) -> JSONValue { .double((value * 10).rounded() / 10) }
            return .object([
                ("minutes", .int(Int64(minutes))), ("rate", .int(Int64(rate))), ("samples", .array(samples.map(\.json))),
                ("rssStartMiB", mib(rssStartMiB)), ("rssEndMiB", mib(rssEndMiB)), ("growthMiB", mib(growthMiB)),
                ("flat", .bool(flat)), ("lost", .int(Int64(lost))), ("duplicates", .int(Int64(duplicates))),
                ("unexpected", .int(Int64(unexpected))),
            ])
        }

        var table: String {
            var lines = [
                "soak: \(minutes) min at \(rate) jobs/s over \(devices) devices (5% invalid)",
                "  seconds   rss MiB   backlog   verdicts  warnings",
            ]
            for s in samples {
                lines.append(String(format: "  %7.0f  %8.1f  %8d  %9d  %8d", s.seconds, s.rssMiB, s.backlog, s.verdicts, s.warnings))
            }
            lines.append(String(
                format: "memory: %.1f MiB at a fifth of the run, %.1f MiB at the end, growth %+.1f MiB: %@",
                rssStartMiB, rssEndMiB, growthMiB, flat ? "flat" : "GROWING"))
            lines.append("backlog drained: \(drained ? "yes" : "NO"); lost \(lost), decided twice \(duplicates), against expectation \(unexpected)")
            return lines.joined(separator: "\n")
        }
    }

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let rig = try BenchRig.Options(&args)
        let minutes = try args.integer("minutes", min: 1) ?? 10
        let rate = try args.integer("rate", min: 1) ?? 500
        let devices = try args.integer("devices", min: 1) ?? 2000
        let sampleSeconds = try args.integer("sample-seconds", min: 1) ?? 10
        _ = try args.positionals(max: 0)
        let results = try SoakBenchmark(
            rig: rig, minutes: minutes, rate: rate, devices: devices, sampleSeconds: Double(sampleSeconds)
        ).run()
        print(json ? results.json.serialized() : results.table)
        return results.passed ? 0 : 1
    }

    let rig: BenchRig.Options
    let minutes: Int
    let rate: Int
    let devices: Int
    let sampleSeconds: Double

    private static func note(_ text: String) {
        FileHandle.standardError.write(Data("bench soak: \(text)\n".utf8))
    }

    func run() throws -> Results {
        let bench = try BenchRig(options: rig)
        defer { bench.close() }
        let workload = try SoakWorkload(
            pki: bench.pki, teamId: BenchRig.teamId, bundleId: bench.bundleId, prefix: bench.runId, devices: devices,
            threads: ProcessInfo.processInfo.activeProcessorCount)
        let live = try bench.start()
        var expected = workload.attestations.map { (jobId: $0.jobId, expectedOK: $0.expectedOK) }
        Self.note("attesting \(devices) devices")
        live.verdicts.expect(workload.attestations.map(\.jobId))
        for message in workload.attestations { try live.producer.send(message) }
        try live.producer.flush()
        guard live.verdicts.wait(stallSeconds: 60) == 0 else {
            throw BenchmarkFailure("attestations without a verdict after 60 s idle:\n\(live.worker.logTail())")
        }
        let warningsBefore = live.worker.problemLines

        Self.note("\(minutes) min at \(rate) jobs/s")
        var samples = [Sample]()
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(minutes) * 60_000_000_000
        let tick: UInt64 = 100_000_000  // jobs go out every 100 ms
        var nextSample = start
        var sent = 0
        func sample(_ now: UInt64) {
            let verdicts = live.verdicts.count - workload.attestations.count
            samples.append(Sample(
                seconds: Double(now - start) / 1e9, rssMiB: live.worker.residentMiB ?? 0, backlog: sent - verdicts,
                verdicts: verdicts, warnings: live.worker.problemLines - warningsBefore))
        }
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < end else { break }
            guard live.worker.isRunning else {
                throw BenchmarkFailure("the worker exited during the soak:\n\(live.worker.logTail())")
            }
            if now >= nextSample {
                sample(now)
                nextSample += UInt64(sampleSeconds * 1e9)
            }
            let due = Int(Double(now - start) / 1e9 * Double(rate))
            if due > sent {
                for message in try workload.next(due - sent) {
                    expected.append((message.jobId, message.expectedOK))
                    try live.producer.send(message)
                }
                sent = due
            }
            Thread.sleep(forTimeInterval: Double(tick) / 1e9)
        }
        try live.producer.flush()
        // Drain: wait until every job has a verdict (or nothing arrives for 30 s), then a last sample.
        let drainDeadline = Date().addingTimeInterval(120)
        while live.verdicts.count < expected.count && Date() < drainDeadline { Thread.sleep(forTimeInterval: 0.2) }
        sample(DispatchTime.now().uptimeNanoseconds)
        live.worker.stop(seconds: 30)

        let check = BenchRig.check(expected, published: live.verdicts.records, stored: try bench.storedVerdicts())
        let fifth = Double(minutes) * 60 / 5
        let startRSS = samples.first { $0.seconds >= fifth }?.rssMiB ?? samples.first?.rssMiB ?? 0
        return Results(
            minutes: minutes, rate: rate, devices: devices, samples: samples, rssStartMiB: startRSS,
            rssEndMiB: samples.last?.rssMiB ?? 0, lost: check.lost, duplicates: check.duplicates, unexpected: check.unexpected)
    }
}
