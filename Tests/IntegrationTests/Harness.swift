import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Synchronization
import Testing

/// Polls `condition` every 100 ms; false after `seconds`. What a worker does on its own threads is waited
/// for this way, never with a fixed sleep: a sanitized worker on a loaded machine can take many times longer.
func eventually(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(100_000)
    }
    return try condition()
}

/// Files the workers under test read (their trust anchors), in one folder of this test process that is
/// removed when the process exits, so test runs leave nothing behind in the temporary folder.
enum TestFiles {
    static let directory: URL = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attest-itest-\(getpid())")
        try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: TestFiles.directory) }
        return directory
    }()
}

/// A test PKI whose roots the workers under test trust, and job minting for many devices.
enum Jobs {
    static let pki = try! TestPKI.generate(
        validFrom: Date(timeIntervalSince1970: 1_577_836_800), validUntil: Date(timeIntervalSince1970: 2_366_841_600))
    static let teamId = "ITEST12345"

    /// The roots as PEM files for ATTEST_TRUST_ANCHORS / ATTEST_RECEIPT_TRUST_ANCHORS.
    static let anchorFiles: (attestation: String, receipt: String) = {
        let attestation = TestFiles.directory.appendingPathComponent("attestation-root.pem").path
        let receipt = TestFiles.directory.appendingPathComponent("receipt-root.pem").path
        try! pki.attestationRootPEM.write(toFile: attestation, atomically: true, encoding: .utf8)
        try! pki.receiptRootPEM.write(toFile: receipt, atomically: true, encoding: .utf8)
        return (attestation, receipt)
    }()

    static func timestamp(_ date: Date) -> String { Timestamp(microseconds: Int64(date.timeIntervalSince1970 * 1_000_000)).rfc3339 }

    /// An attestation job minted at `receivedAt` (the leaf is valid then), bound to SHA-256 of the jobId.
    static func attestation(
        _ device: Device, bundleId: String, jobId: String, receivedAt: Date = Date(), options: AttestationOptions = AttestationOptions(),
        metadata: [(String, JSONValue)] = []
    ) -> [UInt8] {
        let cdh = Digest.sha256.hash(Array(jobId.utf8))
        let minted = try! pki.mintAttestation(
            device: device, teamId: teamId, bundleId: bundleId, clientDataHash: cdh, at: receivedAt, options: options)
        return json([
            ("jobId", .string(jobId)), ("kind", .string("attestation")), ("teamId", .string(teamId)),
            ("bundleId", .string(bundleId)), ("keyId", .string(Base64.encode(device.keyId))),
            ("attestationObject", .string(Base64.encode(minted.attestationObject))),
            ("clientDataHash", .string(Base64.encode(cdh))), ("receivedAt", .string(timestamp(receivedAt))),
        ] + metadata)
    }

    static func assertion(
        _ device: Device, bundleId: String, jobId: String, counter: UInt32, signer: Device? = nil, receivedAt: Date = Date()
    ) -> [UInt8] {
        let cdh = Digest.sha256.hash(Array(jobId.utf8))
        let minted = try! device.mintAssertion(
            teamId: teamId, bundleId: bundleId, clientDataHash: cdh, counter: counter,
            options: AssertionOptions(signingDevice: signer))
        return json([
            ("jobId", .string(jobId)), ("kind", .string("assertion")), ("teamId", .string(teamId)),
            ("bundleId", .string(bundleId)), ("keyId", .string(Base64.encode(device.keyId))),
            ("assertion", .string(Base64.encode(minted.assertion))), ("clientDataHash", .string(Base64.encode(cdh))),
            ("receivedAt", .string(timestamp(receivedAt))),
        ])
    }

    private static func json(_ members: [(String, JSONValue)]) -> [UInt8] { Array(JSONValue.object(members).serialized().utf8) }

    /// Migrates and registers a fresh app through the CLI, as an operator would, with `policy` options.
    static func registerApp(_ bundleId: String, policy: [String] = []) throws {
        for arguments in [["migrate"], ["app", "add", "--team", teamId, "--bundle", bundleId, "--environments", "any"] + policy] {
            let status = try Stack.run(Stack.binary, arguments)
            try #require(status == 0, "attest-worker \(arguments.joined(separator: " ")) failed")
        }
    }
}

/// A stream over `devices` devices: each attests, then signs `assertions` assertions in order; and as
/// many over `androidDevices` Android devices of the same app (its package `package`), interleaved.
struct JobStream {
    var bundleId: String
    var devices: [Device]
    var package: String
    var androidDevices: [AndroidDeviceKey]
    var messages: [(key: [UInt8]?, value: [UInt8])] = []
    /// jobId → expected (ok, reason) and the device it belongs to.
    var expected: [String: (ok: Bool, reason: String?)] = [:]
    var order: [String: [String]] = [:]

    init(devices count: Int, assertions: Int, badSignatureEvery: Int = 0, androidDevices androidCount: Int = 0) throws {
        bundleId = "com.example.itest.\(UUID().uuidString.prefix(8).lowercased())"
        devices = try (0..<count).map { _ in try Device() }
        package = AndroidJobs.package()
        androidDevices = try (0..<androidCount).map { _ in try AndroidDeviceKey() }
        for (d, device) in devices.enumerated() {
            let key = Array(Base64.encode(device.keyId).utf8)
            let attestation = "att-\(bundleId)-\(d)"
            messages.append((key, Jobs.attestation(device, bundleId: bundleId, jobId: attestation)))
            expected[attestation] = (true, nil)
            order[Base64.encode(device.keyId), default: []].append(attestation)
            for n in 1...max(assertions, 1) where assertions > 0 {
                let jobId = "asr-\(bundleId)-\(d)-\(n)"
                let bad = badSignatureEvery > 0 && n % badSignatureEvery == 0
                messages.append((key, Jobs.assertion(device, bundleId: bundleId, jobId: jobId, counter: UInt32(n), signer: bad ? devices[(d + 1) % count] : nil)))
                expected[jobId] = bad ? (false, "signature_invalid") : (true, nil)
                order[Base64.encode(device.keyId), default: []].append(jobId)
            }
        }
        for (d, key) in androidDevices.enumerated() {
            var keyed: [(key: [UInt8]?, value: [UInt8])] = []
            let attestation = "aatt-\(package)-\(d)"
            keyed.append((Array(key.keyId.utf8), AndroidJobs.attestation(key, package: package, jobId: attestation)))
            expected[attestation] = (true, nil)
            order[key.keyId, default: []].append(attestation)
            for n in 1...max(assertions, 1) where assertions > 0 {
                let jobId = "aasr-\(package)-\(d)-\(n)"
                keyed.append((Array(key.keyId.utf8), AndroidJobs.assertion(key, package: package, jobId: jobId)))
                expected[jobId] = (true, nil)
                order[key.keyId, default: []].append(jobId)
            }
            // Interleaved with the Apple jobs, each key's own jobs in order.
            messages.insert(contentsOf: keyed, at: messages.count * d / androidCount)
        }
    }

    /// The `app add` options registering this stream's app with its Android package as well.
    var androidRegistration: [String] { AndroidJobs.registration(package) }
}

/// One `attest-worker run` process under test, its stderr (JSON log lines) kept in a file.
final class WorkerProcess: @unchecked Sendable {
    let process = Process()
    let logFile: URL

    init(topics: (jobs: String, verdicts: String, deadLetters: String), group: String, extra: [String: String] = [:]) throws {
        logFile = FileManager.default.temporaryDirectory.appendingPathComponent("worker-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ATTEST_") }
        environment.merge([
            "ATTEST_KAFKA_BROKERS": try Stack.brokers, "ATTEST_DATABASE_URL": try Stack.databaseURL,
            "ATTEST_KAFKA_PROPERTIES": Stack.environment["ATTEST_KAFKA_PROPERTIES"] ?? "",
            "ATTEST_JOBS_TOPIC": topics.jobs, "ATTEST_VERDICTS_TOPIC": topics.verdicts,
            "ATTEST_DEADLETTER_TOPIC": topics.deadLetters, "ATTEST_CONSUMER_GROUP": group,
            "ATTEST_TRUST_ANCHORS": Jobs.anchorFiles.attestation, "ATTEST_RECEIPT_TRUST_ANCHORS": Jobs.anchorFiles.receipt,
            "ATTEST_ANDROID_TRUST_ANCHORS": AndroidJobs.anchorFile,
            "ATTEST_HTTP_ADDRESS": "127.0.0.1:0", "ATTEST_OPS_HTTP_ADDRESS": "127.0.0.1:0", "ATTEST_LOG_LEVEL": "info",
            // Under --sanitize=address the worker keeps ASan's memory checks, but not the leak check at exit:
            // its process-lifetime objects (metrics, routes, clients) are released by exit, not torn down,
            // and would be reported on every stop. Growth is what matters there, and ops/soak measures it.
            "ASAN_OPTIONS": [Stack.environment["ASAN_OPTIONS"], "detect_leaks=0"].compactMap { $0 }.joined(separator: ":"),
        ]) { _, new in new }
        environment.merge(extra) { _, new in new }
        process.executableURL = URL(fileURLWithPath: Stack.binary)
        process.arguments = ["run"]
        process.environment = environment
        process.standardError = try FileHandle(forWritingTo: logFile)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// The HTTP port the worker logged ("http listening"): the product listener's (`port`) or the operations
    /// listener's (`opsPort`), waiting for it to start.
    func httpPort(_ field: String = "port") throws -> Int {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            for line in log.split(separator: "\n") where line.contains("\"http listening\"") {
                if case .int(let port)? = JSONValue.parse(Array(line.utf8))?[field] { return Int(port) }
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw WorkerProcessError(description: "the worker did not log its HTTP port")
    }

    /// GET http://127.0.0.1:PORT/PATH on the operations listener (health, readiness, metrics) or, with
    /// `product`, on the product one: the status and body.
    func get(_ path: String, product: Bool = false) throws -> (status: Int, body: String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("http-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let port = try httpPort(product ? "port" : "opsPort")
        let status = try Stack.run("/usr/bin/curl", ["-s", "-o", output, "-w", "%{http_code}", "http://127.0.0.1:\(port)\(path)"], capture: true)
        return (Int(status.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0,
                (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    func kill(_ signal: Int32) { Foundation.kill(process.processIdentifier, signal) }

    /// Waits for the process to exit; false on timeout.
    @discardableResult
    func wait(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        return !process.isRunning
    }

    deinit {
        if process.isRunning {
            kill(SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: logFile)
    }
}

struct WorkerProcessError: Error, CustomStringConvertible {
    let description: String
}

/// Reads a topic from the beginning, keeping every message. Its partitions are assigned, not joined
/// through a group: no join or rebalance (seconds on the test broker) before the first message.
final class TopicReader: @unchecked Sendable {
    let reader: KafkaTailReader
    private(set) var messages: [KafkaMessage] = []

    init(topic: String) throws {
        var properties = Stack.kafkaProperties.filter { !["group.id", "session.timeout.ms", "heartbeat.interval.ms"].contains($0.key) }
        properties["bootstrap.servers"] = try Stack.brokers
        reader = try KafkaTailReader(properties: properties, topic: topic, from: .beginning)
    }

    /// Polls until `done(messages)` holds or `seconds` pass; returns whether it held.
    @discardableResult
    func read(seconds: Double, until done: ([KafkaMessage]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            messages += reader.poll(max: 1000, timeoutMs: 100)
            if done(messages) { return true }
        }
        return done(messages)
    }

    /// Verdicts by jobId header, every copy kept (a job published twice shows up twice).
    var verdictsByJob: [String: [String]] {
        var result = [String: [String]]()
        for message in messages {
            guard let header = message.headers.first(where: { $0.name == "jobId" }) else { continue }
            result[String(decoding: header.value, as: UTF8.self), default: []].append(String(decoding: message.value, as: UTF8.self))
        }
        return result
    }

    deinit { reader.close() }
}

/// Produces job messages keyed by keyId and waits for every acknowledgement; `timestampMs` is their
/// record time (the broker timestamp of a CreateTime topic), now when nil.
func produce(_ topic: String, _ messages: [(key: [UInt8]?, value: [UInt8])], timestampMs: Int64? = nil) throws {
    var properties = Stack.kafkaProperties.filter { !["group.id", "session.timeout.ms", "heartbeat.interval.ms", "fetch.wait.max.ms", "auto.offset.reset"].contains($0.key) }
    properties["bootstrap.servers"] = try Stack.brokers
    let producer = try KafkaProducer(properties: properties)
    let failures = Mutex(0)
    for message in messages {
        while true {
            do {
                try producer.produce(topic: topic, key: message.key, value: message.value, headers: [], timestampMs: timestampMs) { result in
                    if case .failure = result { failures.withLock { $0 += 1 } }
                }
                break
            } catch {
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }
    try #require(producer.flush(timeoutMs: 30_000))
    producer.close(timeoutMs: 5000)
    try #require(failures.withLock { $0 } == 0)
}

/// Validates JSON lines against one of Schemas/ with the standard Python validator.
func validate(_ lines: [String], schema: String) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    let script = Stack.repository.appendingPathComponent("Tests/schemas/validate.py").path
    process.arguments = [Stack.environment["PYTHON"] ?? "python3", script, schema]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = output
    try process.run()
    input.fileHandleForWriting.write(Data(lines.joined(separator: "\n").utf8 + [0x0a]))
    try input.fileHandleForWriting.close()
    process.waitUntilExit()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(process.terminationStatus == 0, "schema \(schema): \(text)")
}

/// The samples of a Prometheus text exposition as Python's `prometheus_client` parser reads them (a standard
/// parser, not this project's renderer checking itself): name, labels and value of each.
func prometheusSamples(_ text: String) throws -> [(name: String, labels: [String: String], value: Double)] {
    let script = """
        import json, sys
        from prometheus_client.parser import text_string_to_metric_families
        out = [[s.name, s.labels, s.value] for f in text_string_to_metric_families(sys.stdin.read()) for s in f.samples]
        print(json.dumps(out))
        """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [Stack.environment["PYTHON"] ?? "python3", "-c", script]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    input.fileHandleForWriting.write(Data(text.utf8))
    try input.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "prometheus_client could not parse /metrics")
    guard case .array(let rows)? = JSONValue.parse(Array(data)) else { throw WorkerProcessError(description: "parser output") }
    return rows.compactMap { row in
        guard case .array(let parts) = row, parts.count == 3, case .string(let name) = parts[0], case .object(let labels) = parts[1]
        else { return nil }
        let value: Double
        switch parts[2] {
        case .int(let n): value = Double(n)
        case .double(let d): value = d
        default: return nil
        }
        return (name, Dictionary(uniqueKeysWithValues: labels.compactMap { k, v in if case .string(let s) = v { (k, s) } else { nil } }), value)
    }
}

extension WorkerProcess {
    /// Polls `path` until it answers `status`; false after `seconds`.
    func waitFor(_ path: String, status: Int, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? get(path).status) == status { return true }
            Thread.sleep(forTimeInterval: 0.25)
        }
        return false
    }
}

