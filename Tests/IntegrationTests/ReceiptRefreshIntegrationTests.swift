import AttestCore
import AttestMint
import Foundation
import PostgresClient
import Testing

/// Workers with receipt refresh on against `attest-bench apple-stand-in` (its JWT check, its scripted
/// answers, its per-device request and concurrency counts).
enum ReceiptRefreshHarness {
    static let keyId = "ITESTKEY01"

    /// The stand-in for the integration tests' team and PKI, answering per `script`.
    static func standIn(_ script: String) throws -> AppleStandInProcess {
        try AppleStandInProcess(pki: Jobs.pki, keys: [(Jobs.teamId, keyId, StandInKeys.team)], script: script)
    }

    /// The worker settings that turn refresh on against the stand-in (both environments), rounds every 200 ms.
    static func environment(_ standIn: AppleStandInProcess) throws -> [String: String] {
        let path = standIn.folder.appendingPathComponent("worker-AuthKey.p8").path
        try StandInKeys.team.write(toFile: path, atomically: true, encoding: .utf8)
        return [
            "ATTEST_DEVICECHECK_KEYS": "\(Jobs.teamId):\(keyId):\(path)", "ATTEST_RECEIPT_URL_PRODUCTION": standIn.url(),
            "ATTEST_RECEIPT_URL_DEVELOPMENT": standIn.url(), "ATTEST_RECEIPT_REFRESH_INTERVAL_MS": "200",
            "ATTEST_RECEIPT_REFRESH_PER_MINUTE": "6000",
        ]
    }

    /// A key's refresh state: last status, whether leased now, and the seconds from its last try to its next.
    static func state(_ keyId: [UInt8]) throws -> (status: String?, leased: Bool, waitSeconds: Int64?) {
        let rows = try PGConnection(conninfo: try Stack.databaseURL).execute(
            """
            SELECT last_status, (lease_owner IS NOT NULL AND lease_expires_at > now())::text,
                extract(epoch FROM next_due_at - last_attempt_at)::bigint
            FROM receipt_refresh WHERE key_id = $1
            """, [.bytes(keyId)])
        guard rows.count == 1 else { return (nil, false, nil) }
        return (rows.string(0, 0), rows.string(0, 1) == "true", rows.int(0, 2))
    }

    /// Every device already enrolled (the other suites' attestations, all of the one test team) is made due
    /// a year from now, so a test's refreshers spend their rounds on the devices the test attests next.
    static func parkEnrolledDevices() throws {
        _ = try PGConnection(conninfo: try Stack.databaseURL).execute(
            "UPDATE receipt_refresh SET next_due_at = now() + interval '365 days', lease_owner = NULL, lease_expires_at = NULL")
    }

    /// Devices leased to a refresher now (a refresh in flight).
    static func leasedNow() throws -> Int64 {
        try PGConnection(conninfo: try Stack.databaseURL).execute(
            "SELECT count(*) FROM receipt_refresh WHERE lease_owner IS NOT NULL AND lease_expires_at > now()").int(0, 0) ?? 0
    }

    static func value(_ sql: String, _ keyId: [UInt8]) throws -> String? {
        try PGConnection(conninfo: try Stack.databaseURL).execute(sql, [.bytes(keyId)]).string(0, 0)
    }

    static func key(_ device: Device) -> [UInt8] { Array(Base64.encode(device.keyId).utf8) }

    /// Runs attest-worker with `arguments` and only `environment` (plus PATH); its stdout and status.
    static func command(_ arguments: [String], _ environment: [String: String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Stack.binary)
        process.arguments = arguments
        process.environment = environment.merging(["PATH": Stack.environment["PATH"] ?? "/usr/bin:/bin"]) { a, _ in a }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

extension LiveStack {
    /// Receipt refresh against real workers (docs/device-intelligence.md, "Receipt refresh").
    @Suite struct ReceiptRefreshIntegrationTests {
        static func verdict(_ reader: TopicReader, _ jobId: String, seconds: Double = 60) -> JSONValue? {
            _ = reader.read(seconds: seconds) { _ in reader.verdictsByJob[jobId] != nil }
            return reader.verdictsByJob[jobId]?.first.flatMap { JSONValue.parse(Array($0.utf8)) }
        }

        /// Two workers on one database refresh the devices one worker attested: rising metrics are stored,
        /// kept and scored (and reach the next verdict and the events outbox), the forged receipt is never
        /// stored, a 429's Retry-After holds the device, and no device is ever refreshed by both at once.
        @Test func twoWorkersRefreshStoreAndScoreMetricsRejectForgeriesAndHonourRetryAfter() throws {
            let bundleId = "com.example.rsched.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            try ReceiptRefreshHarness.parkEnrolledDevices()
            let (rising, forged, limited) = (try Device(), try Device(), try Device())
            let busy = try (0..<6).map { _ in try Device() }
            // waits: three 1 s answers per busy device, due a second apart, to see two workers never overlap
            let script = """
                {"devices": {
                    "\(Base64.encode(rising.keyId))": [{"riskMetric": 3, "notBeforeSeconds": 1}, {"riskMetric": 12}],
                    "\(Base64.encode(forged.keyId))": [{"forged": true, "riskMetric": 50}],
                    "\(Base64.encode(limited.keyId))": [{"status": 429, "retryAfter": "120"}]},
                 "default": [{"riskMetric": 1, "delaySeconds": 1, "notBeforeSeconds": 1}]}
                """
            let standIn = try ReceiptRefreshHarness.standIn(script)
            let a = try Stack.topics("rscha", partitions: 1)
            let b = try Stack.topics("rschb", partitions: 1)
            let workers = try [a, b].map {
                try WorkerProcess(topics: $0, group: "g-\(UUID().uuidString)", extra: try ReceiptRefreshHarness.environment(standIn))
            }
            defer { for worker in workers { worker.kill(SIGTERM); worker.wait(seconds: 30) } }
            let reader = try TopicReader(topic: a.verdicts)
            let id = { (name: String) in "\(bundleId)-\(name)" }
            let devices = [rising, forged, limited] + busy
            try produce(a.jobs, devices.enumerated().map { i, device in
                (key: ReceiptRefreshHarness.key(device), value: Jobs.attestation(device, bundleId: bundleId, jobId: id("att\(i)")))
            })
            for i in devices.indices { #expect(Self.verdict(reader, id("att\(i)"))?["ok"] == .bool(true), "\(workers[0].log.suffix(1500))") }

            // The rising metric: both receipts stored, the second scored with its growth.
            let refreshedTwice = try eventually(seconds: 30) {
                try ReceiptRefreshHarness.value("SELECT count(*)::text FROM receipt_metrics WHERE key_id = $1", rising.keyId) == "2"
            }
            #expect(refreshedTwice, "\(workers[0].log.suffix(1500))")
            #expect(try ReceiptRefreshHarness.state(rising.keyId).status == "refreshed")
            let identity = "key:" + Hex.encode(rising.keyId)
            let risk = try PGConnection(conninfo: try Stack.databaseURL).execute(
                "SELECT receipt_risk_metric, receipt_metric_growth, score, category FROM device_risk WHERE bundle_id = $1 AND identity = $2",
                [.text(bundleId), .text(identity)])
            // 12 is 7 over the allowance (4 points each, at most 4), grown by 9 from 3 (5 points each beyond 2, at most 4).
            #expect(risk.int(0, 0) == 12 && risk.int(0, 1) == 9 && risk.int(0, 2) == 36 && risk.string(0, 3) == "suspicious")
            let events = try PGConnection(conninfo: try Stack.databaseURL).execute(
                "SELECT detail->>'jobId' FROM events WHERE kind = 'device.risk_category_changed' AND bundle_id = $1 AND detail->>'identity' = $2",
                [.text(bundleId), .text(identity)])
            #expect(events.count == 1 && (events.string(0, 0) ?? "").hasPrefix("receipt:"))
            // The next verdict of the device carries the metric, its date and its factors.
            try produce(a.jobs, [(key: ReceiptRefreshHarness.key(rising), value: Jobs.assertion(rising, bundleId: bundleId, jobId: id("a1"), counter: 1))])
            let intelligence = Self.verdict(reader, id("a1"))?["deviceIntelligence"]
            #expect(intelligence?["receiptRiskMetric"] == .int(12), "\(intelligence?.serialized() ?? "none")")
            #expect(intelligence?["receiptRiskMetricDate"]?.stringValue != nil)
            #expect(intelligence?["riskScore"] == .int(36))

            // The forged receipt: rejected, never stored.
            #expect(try eventually(seconds: 20) { try ReceiptRefreshHarness.state(forged.keyId).status == "rejected" })
            #expect(try ReceiptRefreshHarness.value("SELECT count(*)::text FROM receipt_metrics WHERE key_id = $1", forged.keyId) == "0")
            #expect(try ReceiptRefreshHarness.value("SELECT receipt_risk_metric::text FROM device_risk WHERE identity = 'key:' || encode($1, 'hex')", forged.keyId) == nil)

            // 429 with Retry-After: 120 holds the device at least that long: one request only.
            #expect(try eventually(seconds: 20) { try ReceiptRefreshHarness.state(limited.keyId).status == "retry_later" })
            #expect((try ReceiptRefreshHarness.state(limited.keyId).waitSeconds ?? 0) >= 120)

            // The busy devices are refreshed again and again (1 s answers, due a second later) by both
            // workers, and never twice at once.
            #expect(try eventually(seconds: 30) {
                let counts = try standIn.requests()
                return busy.allSatisfy { (counts[Base64.encode($0.keyId)]?.requests ?? 0) >= 3 }
            })
            let counts = try standIn.requests()
            for device in devices { #expect((counts[Base64.encode(device.keyId)]?.maxConcurrent ?? 0) <= 1, "\(Base64.encode(device.keyId))") }
            #expect(counts[Base64.encode(limited.keyId)]?.requests == 1)
            #expect(counts[Base64.encode(forged.keyId)]?.requests == 1, "a rejected receipt backs off")
            let byWorker = try PGConnection(conninfo: try Stack.databaseURL).execute(
                "SELECT count(*) FROM receipt_refresh WHERE last_status = 'refreshed'").int(0, 0)
            #expect((byWorker ?? 0) >= 6)
        }

        /// Apple's freshness rules for a refreshed receipt, against a stand-in that signs correctly but hands
        /// back a stale, a future, an expired or a rolled-back receipt: each is refused with its reason and a
        /// log line, stores nothing (the device keeps its receipt, no metric, no score), and the device backs
        /// off; a good refresh after them (forced from the shell) is stored.
        @Test func staleFutureExpiredAndRolledBackReceiptsAreRefusedAndBackOff() throws {
            let bundleId = "com.example.rfresh.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            try ReceiptRefreshHarness.parkEnrolledDevices()
            let (stale, future, expired, rolledBack) = (try Device(), try Device(), try Device(), try Device())
            let good = #"{"riskMetric": 2, "createdSeconds": 55}"#
            let script = """
                {"devices": {
                    "\(Base64.encode(stale.keyId))": [{"createdSeconds": -86400, "riskMetric": 40}, \(good)],
                    "\(Base64.encode(future.keyId))": [{"createdSeconds": 3600, "riskMetric": 40}, \(good)],
                    "\(Base64.encode(expired.keyId))": [{"expirySeconds": -864000, "riskMetric": 40}, \(good)],
                    "\(Base64.encode(rolledBack.keyId))": [
                        {"createdSeconds": 50, "riskMetric": 3, "notBeforeSeconds": 1}, {"riskMetric": 40}, \(good)]},
                 "default": [{"status": 304}]}
                """
            let standIn = try ReceiptRefreshHarness.standIn(script)
            let topics = try Stack.topics("rfresh", partitions: 1)
            let extra = try ReceiptRefreshHarness.environment(standIn)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: extra)
            defer { worker.kill(SIGTERM); worker.wait(seconds: 30) }
            let reader = try TopicReader(topic: topics.verdicts)
            let devices = [("stale", stale), ("future", future), ("expired", expired), ("rolled back", rolledBack)]
            try produce(topics.jobs, devices.map { name, device in
                (key: ReceiptRefreshHarness.key(device), value: Jobs.attestation(device, bundleId: bundleId, jobId: "\(bundleId)-\(name)"))
            })
            for (name, _) in devices { #expect(Self.verdict(reader, "\(bundleId)-\(name)")?["ok"] == .bool(true), "\(worker.log.suffix(1500))") }
            let receipt = { (device: Device) in
                try ReceiptRefreshHarness.value("SELECT encode(sha256(receipt), 'hex') FROM devices WHERE key_id = $1", device.keyId)
            }
            let metrics = { (device: Device) in
                try ReceiptRefreshHarness.value("SELECT count(*)::text FROM receipt_metrics WHERE key_id = $1", device.keyId)
            }
            // Read once the verdicts are out: a refused refresh leaves it as it is, whenever it ran.
            let attested = try devices.map { try receipt($0.1) }

            // The rolled-back device first takes a good receipt (created 50 s ahead, inside the skew), then is
            // handed one created before it.
            #expect(try eventually(seconds: 30) { try metrics(rolledBack) == "1" }, "\(worker.log.suffix(1500))")
            let storedFirst = try receipt(rolledBack)
            let reasons = [
                "creation time (field 12) is more than five minutes old", "creation time (field 12) is in the future",
                "expiration time (field 21) has passed", "created before the stored receipt (a rollback)",
            ]
            for (index, (name, device)) in devices.enumerated() {
                let refused = try eventually(seconds: 30) { try ReceiptRefreshHarness.state(device.keyId).status == "rejected" }
                #expect(refused, "\(name): \(worker.log.suffix(1500))")
                let state = try ReceiptRefreshHarness.state(device.keyId)
                // Backed off: the next try is at least the rejected answers' first backoff away.
                #expect((state.waitSeconds ?? 0) >= 900, "\(name): \(state)")
                #expect(try receipt(device) == (index == 3 ? storedFirst : attested[index]), "\(name): the stored receipt moved")
                #expect(try metrics(device) == (index == 3 ? "1" : "0"), "\(name)")
                let lastError = try ReceiptRefreshHarness.value("SELECT last_error FROM receipt_refresh WHERE key_id = $1", device.keyId)
                #expect(lastError == reasons[index], "\(name): \(lastError ?? "none")")
                let line = worker.logLines.first {
                    $0["msg"] == .string("refreshed receipt rejected; nothing stored") && $0["keyId"] == .string(Base64.encode(device.keyId))
                }
                #expect(line?["reason"] == .string(reasons[index]) && line?["teamId"] == .string(Jobs.teamId), "\(name): \(worker.log.suffix(1500))")
            }
            // The 40 was never scored, and nothing of a receipt or a key is in the log.
            let scored = try PGConnection(conninfo: try Stack.databaseURL).execute(
                "SELECT count(*) FROM device_risk WHERE bundle_id = $1 AND receipt_risk_metric = 40", [.text(bundleId)])
            #expect(scored.int(0, 0) == 0)
            for device in [stale, future, expired, rolledBack] {
                #expect(!worker.log.contains(Base64.encode(device.publicKeyX962)))
            }
            #expect(!worker.log.contains("MII"), "a certificate or receipt reached the log")
            let counts = try standIn.requests()
            for (index, (name, device)) in devices.enumerated() {
                #expect(counts[Base64.encode(device.keyId)]?.requests == (index == 3 ? 2 : 1), "\(name): \(counts)")
            }

            // A good refresh after the bad ones is stored.
            var environment = extra
            environment["ATTEST_DATABASE_URL"] = try Stack.databaseURL
            environment["ATTEST_RECEIPT_TRUST_ANCHORS"] = Jobs.anchorFiles.receipt
            for (name, device) in devices {
                let refreshed = try ReceiptRefreshHarness.command(["receipt", "refresh", "--key-id", Base64.encode(device.keyId)], environment)
                #expect(refreshed.status == 0 && JSONValue.parse(Array(refreshed.output.utf8))?["outcome"]?.stringValue == "refreshed",
                    "\(name): \(refreshed.output)")
                #expect(try ReceiptRefreshHarness.state(device.keyId).status == "refreshed", "\(name)")
            }
            #expect(try metrics(stale) == "1" && metrics(rolledBack) == "2")
        }

        /// `attest-worker receipt refresh` refreshes one device from a shell (a worker without refresh
        /// attested it) and prints the parsed receipt; `receipt show` prints it with its metric history.
        @Test func receiptCommandsRefreshAndShowOneDevice() throws {
            let bundleId = "com.example.rcli.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            try ReceiptRefreshHarness.parkEnrolledDevices()
            let standIn = try ReceiptRefreshHarness.standIn(#"{"default": [{"riskMetric": 7}]}"#)
            let topics = try Stack.topics("rcli", partitions: 1)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            defer { worker.kill(SIGTERM); worker.wait(seconds: 30) }
            let reader = try TopicReader(topic: topics.verdicts)
            let device = try Device()
            let keyId = Base64.encode(device.keyId)
            try produce(topics.jobs, [(key: ReceiptRefreshHarness.key(device), value: Jobs.attestation(device, bundleId: bundleId, jobId: "\(bundleId)-att"))])
            #expect(Self.verdict(reader, "\(bundleId)-att")?["ok"] == .bool(true))
            var environment = try ReceiptRefreshHarness.environment(standIn)
            environment["ATTEST_DATABASE_URL"] = try Stack.databaseURL
            environment["ATTEST_RECEIPT_TRUST_ANCHORS"] = Jobs.anchorFiles.receipt
            let refreshed = try ReceiptRefreshHarness.command(["receipt", "refresh", "--key-id", keyId, "--team", Jobs.teamId, "--bundle", bundleId], environment)
            #expect(refreshed.status == 0, "\(refreshed.output)")
            let printed = JSONValue.parse(Array(refreshed.output.utf8))
            #expect(printed?["outcome"]?.stringValue == "refreshed", "\(refreshed.output)")
            #expect(printed?["receipt"]?["riskMetric"] == .int(7) && printed?["receipt"]?["type"]?.stringValue == "RECEIPT")
            let shown = try ReceiptRefreshHarness.command(["receipt", "show", "--key-id", keyId], environment)
            #expect(shown.status == 0, "\(shown.output)")
            let record = JSONValue.parse(Array(shown.output.utf8))
            #expect(record?["receipt"]?["type"]?.stringValue == "RECEIPT" && record?["receipt"]?["riskMetric"] == .int(7), "\(shown.output)")
            #expect(record?["refresh"]?["lastStatus"]?.stringValue == "refreshed")
            guard case .array(let metrics)? = record?["metrics"] else { Issue.record("no metrics: \(shown.output)"); return }
            #expect(metrics.count == 1 && metrics.first?["metric"] == .int(7))
            // Another app's name, or an unknown key, refreshes nothing.
            #expect(try ReceiptRefreshHarness.command(["receipt", "refresh", "--key-id", keyId, "--team", Jobs.teamId, "--bundle", bundleId + ".x"], environment).status == 1)
            #expect(try ReceiptRefreshHarness.command(["receipt", "show", "--key-id", Base64.encode([UInt8](repeating: 9, count: 32))], environment).status == 1)
        }

        /// Apple answering after 15 s holds the refresher, never a job: while a refresh is in flight, new
        /// attestations and assertions are answered. The delay is long against the jobs' own time on a
        /// sanitized worker, so a verdict that waited for the refresh is told apart.
        @Test func verdictsAreNotDelayedByAnEndpointThatAnswersLate() throws {
            let bundleId = "com.example.rslow.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            try ReceiptRefreshHarness.parkEnrolledDevices()
            // waits: the endpoint's 15 s answer, long against a sanitized worker's jobs, which must not wait for it
            let standIn = try ReceiptRefreshHarness.standIn(#"{"default": [{"riskMetric": 1, "delaySeconds": 15}]}"#)
            let topics = try Stack.topics("rslow", partitions: 1)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: try ReceiptRefreshHarness.environment(standIn))
            defer { worker.kill(SIGTERM); worker.wait(seconds: 30) }
            let reader = try TopicReader(topic: topics.verdicts)
            let first = try Device()
            let id = { (name: String) in "\(bundleId)-\(name)" }
            try produce(topics.jobs, [(key: ReceiptRefreshHarness.key(first), value: Jobs.attestation(first, bundleId: bundleId, jobId: id("att")))])
            #expect(Self.verdict(reader, id("att"))?["ok"] == .bool(true), "\(worker.log.suffix(2000))")
            // The refresher takes a due device (the oldest due first: other tests' devices of the team too)
            // and waits on the endpoint.
            #expect(try eventually(seconds: 10) { try ReceiptRefreshHarness.leasedNow() > 0 }, "\(worker.log.suffix(2000))")
            let others = try (0..<3).map { _ in try Device() }
            var jobs = [(key: [UInt8]?, value: [UInt8])]()
            jobs.append((ReceiptRefreshHarness.key(first), Jobs.assertion(first, bundleId: bundleId, jobId: id("a1"), counter: 1)))
            for (i, device) in others.enumerated() {
                jobs.append((ReceiptRefreshHarness.key(device), Jobs.attestation(device, bundleId: bundleId, jobId: id("att\(i)"))))
            }
            let sent = Date()
            try produce(topics.jobs, jobs)
            for jobId in [id("a1"), id("att0"), id("att1"), id("att2")] {
                #expect(Self.verdict(reader, jobId, seconds: 20)?["ok"] == .bool(true), "\(jobId)")
            }
            let elapsed = Date().timeIntervalSince(sent)
            #expect(elapsed < 10, "verdicts took \(elapsed) s while a refresh waited on the endpoint")
            #expect(try ReceiptRefreshHarness.leasedNow() > 0, "a refresh was still in flight")
        }
    }
}
