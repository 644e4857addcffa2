import AttestCore
import AttestCrypto
import Dispatch
import Foundation
import KafkaClient
import Synchronization

/// Produces `bench pipeline` jobs keyed by keyId, each stamped with receivedAt as it is handed over.
final class JobProducer: Sendable {
    private let producer: KafkaProducer
    private let topic: String
    private let failures = Atomic<Int>(0)

    /// `properties`: the client settings the worker gets (ATTEST_KAFKA_PROPERTIES) without the
    /// consumer-only ones, plus `bootstrap.servers`. Without a `linger.ms` of their own, jobs linger 1 ms
    /// (librdkafka's default is 5): a backend waiting for its verdict does not hold its job back, and the
    /// worker's broker stage, which starts at the job's create time, is mostly the broker's.
    init(properties: [String: String], topic: String) throws {
        producer = try KafkaProducer(properties: [
            "linger.ms": "1", "statistics.interval.ms": "\(BrokerRequestTally.statisticsIntervalMs)",
        ].merging(properties) { _, b in b })
        self.topic = topic
    }

    /// The requests the producer has sent to the broker, as of its latest statistics.
    var requests: BrokerRequests? { producer.requestCounts() }

    /// Queues one job, waiting while librdkafka's local queue is full; `acknowledged` gets the wall clock
    /// (ms) of its delivery report, on librdkafka's thread, when the broker took it.
    func send(_ message: PipelineWorkload.Message, acknowledged: (@Sendable (Int64) -> Void)? = nil) throws {
        let value = message.line(receivedAt: SystemClock().now().rfc3339)
        while true {
            do {
                try producer.produce(topic: topic, key: message.key, value: value, headers: []) { [self] result in
                    switch result {
                    case .failure: failures.add(1, ordering: .relaxed)
                    case .success: acknowledged?(Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
                    }
                }
                return
            } catch where error.code == KafkaError.Code.queueFull {
                Thread.sleep(forTimeInterval: 0.001)
            }
        }
    }

    /// Waits for every acknowledgement; throws when one is missing or a delivery failed.
    func flush() throws {
        guard producer.flush(timeoutMs: 60_000) else { throw BenchmarkFailure("jobs not acknowledged within 60 s") }
        let failed = failures.load(ordering: .relaxed)
        guard failed == 0 else { throw BenchmarkFailure("\(failed) jobs could not be produced") }
    }

    func close() { producer.close(timeoutMs: 5_000) }
}

/// Reads the verdicts topic from its beginning on a thread of its own (with a group of its own) and keeps,
/// per jobId, when its first verdict arrived, the distinct verdicts published for it and how many copies.
final class VerdictCollector: Sendable {
    /// What arrived for one jobId.
    struct Record: Sendable {
        /// `DispatchTime` uptime of the poll that returned the first copy, in nanoseconds.
        var firstSeen: UInt64
        /// The same moment on the wall clock, and the first copy's create time (the worker's producer
        /// stamped it when it handed the verdict over), in milliseconds since 1970: the verdict's trip.
        var firstSeenWallMs: Int64
        var createdMs: Int64?
        /// Whether the first verdict accepted the job.
        var ok: Bool
        /// SHA-256 of each distinct verdict text, first one first.
        var digests: [[UInt8]]
        var copies: Int
    }

    private struct State {
        var records: [String: Record] = [:]
        /// jobIds announced by `expect` that have no verdict yet.
        var waiting: Set<String> = []
        var lastArrival: UInt64 = 0
    }

    private let consumer: KafkaConsumer
    private let state = Mutex(State())
    private let stopping = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)

    /// `properties`: the client settings with `bootstrap.servers`; the fetch wait is cut to `fetchWaitMs`
    /// (10 by default), since the measuring consumer must not add the broker's unwoken fetch wait to the
    /// latencies it measures.
    init(properties: [String: String], topic: String, fetchWaitMs: Int = 10) throws {
        var properties = properties
        properties["group.id"] = "bench-verdicts-\(UUID().uuidString)"
        properties["auto.offset.reset"] = "earliest"
        properties["enable.auto.commit"] = "false"
        properties["fetch.wait.max.ms"] = "\(fetchWaitMs)"
        properties["statistics.interval.ms"] = properties["statistics.interval.ms"] ?? "\(BrokerRequestTally.statisticsIntervalMs)"
        consumer = try KafkaConsumer(properties: properties, topics: [topic], delegate: nil)
        let thread = Thread { [self] in pollLoop() }
        thread.name = "bench-verdicts"
        thread.start()
    }

    /// The requests the reader has sent to the broker, as of its latest statistics.
    var requests: BrokerRequests? { consumer.requestCounts() }

    private func pollLoop() {
        while !stopping.load(ordering: .relaxed) {
            let messages = consumer.poll(max: 1000, timeoutMs: 50)
            guard !messages.isEmpty else { continue }
            let now = DispatchTime.now().uptimeNanoseconds
            let wallMs = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
            let arrivals = messages.compactMap { message -> (jobId: String, digest: [UInt8], ok: Bool, createdMs: Int64?)? in
                guard let header = message.headers.first(where: { $0.name == "jobId" }) else { return nil }
                return (
                    String(decoding: header.value, as: UTF8.self), Digest.sha256.hash(message.value),
                    Self.accepts(message.value), message.timestampMs
                )
            }
            state.withLock { state in
                for arrival in arrivals {
                    if var record = state.records[arrival.jobId] {
                        record.copies += 1
                        if !record.digests.contains(arrival.digest) { record.digests.append(arrival.digest) }
                        state.records[arrival.jobId] = record
                    } else {
                        state.records[arrival.jobId] = Record(
                            firstSeen: now, firstSeenWallMs: wallMs, createdMs: arrival.createdMs, ok: arrival.ok,
                            digests: [arrival.digest], copies: 1)
                        state.waiting.remove(arrival.jobId)
                    }
                }
                state.lastArrival = now
            }
        }
        stopped.signal()
    }

    /// Whether a verdict's text says `"ok":true`, as `Verdict.json` serializes an accepted job (any such
    /// text inside a string value would be escaped).
    static func accepts(_ verdict: [UInt8]) -> Bool {
        let needle = Array(#""ok":true"#.utf8)
        guard verdict.count >= needle.count else { return false }
        return (0...(verdict.count - needle.count)).contains { start in
            verdict[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    /// Announces jobs about to be produced, for `wait`.
    func expect(_ jobIds: some Sequence<String>) {
        state.withLock { state in
            for jobId in jobIds where state.records[jobId] == nil { state.waiting.insert(jobId) }
        }
    }

    /// Waits until every announced job has a verdict, or until no verdict at all arrived for
    /// `stallSeconds`; returns how many announced jobs still have none.
    func wait(stallSeconds: Double) -> Int {
        var since = DispatchTime.now().uptimeNanoseconds
        while true {
            let (missing, last) = state.withLock { ($0.waiting.count, $0.lastArrival) }
            let now = DispatchTime.now().uptimeNanoseconds
            since = max(since, last)
            if missing == 0 || Double(now - since) / 1e9 > stallSeconds { return missing }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    var records: [String: Record] { state.withLock { $0.records } }

    /// How many jobs have a verdict (without copying the records).
    var count: Int { state.withLock { $0.records.count } }

    /// Stops the poll thread and leaves the group.
    func close() {
        stopping.store(true, ordering: .relaxed)
        stopped.wait()
        consumer.close()
    }
}

/// `attest-worker run` (the executable at `binary`) as a child process; its stderr (JSON log lines) goes to
/// a file. It is started through `setpriv --pdeathsig TERM` (util-linux), so it stops in order even when the
/// benchmark dies without stopping it.
final class WorkerProcess {
    private let process = Process()
    let logPath: String

    init(binary: String, environment: [String: String], logPath: String) throws {
        self.logPath = logPath
        guard FileManager.default.createFile(atPath: logPath, contents: nil) else {
            throw BenchmarkFailure("cannot create \(logPath)")
        }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--pdeathsig", "TERM", "--", binary, "run"]
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try process.run()
    }

    var isRunning: Bool { process.isRunning }

    /// The worker's pid (setpriv execs the worker, so the PID is its own).
    var pid: Int32 { process.processIdentifier }

    /// The worker's resident memory in MiB, from /proc (setpriv execs the worker, so the PID is its own).
    var residentMiB: Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kiB = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kiB / 1024
    }

    /// Log lines at warning level or above so far.
    var problemLines: Int {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").count { $0.contains(#""level":"warning""#) || $0.contains(#""level":"error""#) }
    }

    /// SIGTERM (the worker's orderly stop), then SIGKILL if it is still there after `seconds`.
    func stop(seconds: Double) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// The last lines of the worker's log, for error messages.
    func logTail(lines: Int = 20) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }
}
