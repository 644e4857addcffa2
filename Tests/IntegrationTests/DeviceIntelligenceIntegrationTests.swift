import AttestCore
import AttestJobs
import AttestMint
import DeviceIntelligence
import Foundation
import KafkaClient
import PostgresClient
import Testing

extension LiveStack {
    /// Issue 5 end to end: monthly active devices, quotas and risk scores as the worker stores them in
    /// PostgreSQL, and what `attest-worker mad` and the billing views report.
    @Suite struct DeviceIntelligenceIntegrationTests {
        static func bundle() -> String { "com.example.intel.\(UUID().uuidString.prefix(8).lowercased())" }

        /// One worker on fresh topics, fed one job at a time.
        final class Line {
            let topics: (jobs: String, verdicts: String, deadLetters: String)
            let worker: WorkerProcess
            let reader: TopicReader

            init(_ prefix: String, extra: [String: String] = [:]) throws {
                topics = try Stack.topics(prefix)
                worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: extra)
                reader = try TopicReader(topic: topics.verdicts)
            }

            /// Publishes a job and returns its verdict.
            func decide(_ job: [UInt8]) throws -> JSONValue {
                let jobId = try #require(JSONValue.parse(job)?["jobId"].flatMap { if case .string(let s) = $0 { s } else { nil } })
                let key = JSONValue.parse(job)?["keyId"].flatMap { if case .string(let s) = $0 { Array(s.utf8) } else { nil } }
                try produce(topics.jobs, [(key, job)])
                let seen = reader.read(seconds: 60) { _ in self.reader.verdictsByJob[jobId] != nil }
                try #require(seen, "no verdict for \(jobId): \(worker.log.suffix(1500))")
                return try #require(JSONValue.parse(Array(reader.verdictsByJob[jobId]![0].utf8)))
            }
        }

        static func connection() throws -> PGConnection { try PGConnection(conninfo: try Stack.databaseURL) }

        /// CONTRACT 7's rule recomputed from the stored verdicts and devices alone, for this month.
        static func independentCount(_ bundleId: String, month: String) throws -> Int64? {
            try connection().execute(
                """
                SELECT count(DISTINCT coalesce('fingerprint:' || d.fingerprint, 'key:' || encode(d.key_id, 'hex')))
                FROM verdicts v JOIN devices d ON d.key_id = decode(v.key_id, 'base64')
                WHERE v.ok AND v.team_id = $1 AND v.bundle_id = $2 AND to_char(v.received_at AT TIME ZONE 'UTC', 'YYYY-MM') = $3
                """,
                [.text(Jobs.teamId), .text(bundleId), .text(month)]
            ).int(0, 0)
        }

        @Test func madIsExactAfterARedeliveryStormWithTwoWorkersDecidingTheSameJobs() throws {
            let bundleId = Self.bundle()
            try Jobs.registerApp(bundleId)
            let month = Timestamp(microseconds: Int64(Date().timeIntervalSince1970 * 1_000_000)).utcMonth
            // 24 devices; 20..23 regenerate the keys of 0..3 (same fingerprint); 4..9 send no fingerprint.
            let devices = try (0..<24).map { _ in try Device() }
            var messages = [(key: [UInt8]?, value: [UInt8])]()
            for (d, device) in devices.enumerated() {
                let fingerprint = d >= 20 ? "fp-\(d - 20)" : "fp-\(d)"
                let metadata: [(String, JSONValue)] = (4..<10).contains(d) ? [] : [("deviceFingerprint", .string(fingerprint))]
                let key = Array(Base64.encode(device.keyId).utf8)
                messages.append((key, Jobs.attestation(device, bundleId: bundleId, jobId: "att-\(bundleId)-\(d)", metadata: metadata)))
                for n in 1...3 {
                    messages.append((key, Jobs.assertion(device, bundleId: bundleId, jobId: "asr-\(bundleId)-\(d)-\(n)", counter: UInt32(n))))
                }
            }
            let topics = try Stack.topics("storm")
            // Two consumer groups: both workers decide every job, concurrently, against one database.
            let first = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_BATCH_SIZE": "16"])
            let second = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_BATCH_SIZE": "16"])
            try produce(topics.jobs, messages + messages + messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 120) { $0.count >= 6 * messages.count }, "\(first.log.suffix(1500))\n\(second.log.suffix(1500))")
            try produce(topics.jobs, messages)
            #expect(verdicts.read(seconds: 60) { $0.count >= 8 * messages.count })
            for (jobId, copies) in verdicts.verdictsByJob {
                #expect(Set(copies).count == 1, "\(jobId) published with different verdicts")
                #expect(JSONValue.parse(Array(copies[0].utf8))?["ok"] == .bool(true), "\(jobId): \(copies[0])")
            }

            let expected: Int64 = 20
            #expect(try Self.independentCount(bundleId, month: month) == expected)
            let db = try Self.connection()
            let app = [PGValue.text(Jobs.teamId), .text(bundleId)]
            #expect(try db.execute("SELECT count(*) FROM mad_devices WHERE team_id = $1 AND bundle_id = $2", app).int(0, 0) == expected)
            #expect(try db.execute("SELECT devices FROM mad_totals WHERE team_id = $1 AND bundle_id = $2", app).int(0, 0) == expected)
            let monthly = try db.execute("SELECT month, devices FROM billing_mad_monthly WHERE team_id = $1 AND bundle_id = $2", app)
            #expect(monthly.count == 1 && monthly.string(0, 0) == month && monthly.int(0, 1) == expected)
            let daily = try db.execute(
                "SELECT sum(new_devices)::bigint, max(devices_to_date) FROM billing_mad_daily WHERE team_id = $1 AND bundle_id = $2", app)
            #expect(daily.int(0, 0) == expected && daily.int(0, 1) == expected)
            // The risk history moved once per device identity, not once per copy.
            #expect(try db.execute("SELECT sum(attestations)::bigint, sum(keys)::bigint FROM device_risk WHERE team_id = $1 AND bundle_id = $2", app).int(0, 0) == 24)

            let mad = try Stack.run(Stack.binary, ["mad", "--app", "\(Jobs.teamId).\(bundleId)", "--json"], capture: true)
            #expect(mad.status == 0)
            #expect(JSONValue.parse(Array(mad.output.utf8)) == .array([.object([
                ("teamId", .string(Jobs.teamId)), ("bundleId", .string(bundleId)), ("month", .string(month)), ("devices", .int(expected)),
            ])]))
            let table = try Stack.run(Stack.binary, ["mad", "--app", "\(Jobs.teamId).\(bundleId)"], capture: true)
            #expect(table.output.contains(month) && table.output.contains(" \(expected)\n"), "\(table.output)")
            try validate(verdicts.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "verdict")
        }

        @Test func aRegeneratedKeyWithTheSameFingerprintCountsOnce() throws {
            let bundleId = Self.bundle()
            try Jobs.registerApp(bundleId)
            let line = try Line("regen")
            let fingerprint: [(String, JSONValue)] = [("deviceFingerprint", .string("fp-regen"))]
            let first = try line.decide(Jobs.attestation(try Device(), bundleId: bundleId, jobId: "regen-1-\(bundleId)", metadata: fingerprint))
            let second = try line.decide(Jobs.attestation(try Device(), bundleId: bundleId, jobId: "regen-2-\(bundleId)", metadata: fingerprint))
            #expect(first["ok"] == .bool(true) && second["ok"] == .bool(true))
            #expect(first["deviceIntelligence"]?["deviceId"] == second["deviceIntelligence"]?["deviceId"])
            #expect(second["deviceIntelligence"]?["attestationCount"] == .int(2))
            let rows = try Self.connection().execute(
                "SELECT count(*) FROM mad_devices WHERE team_id = $1 AND bundle_id = $2", [.text(Jobs.teamId), .text(bundleId)])
            #expect(rows.int(0, 0) == 1)
        }

        @Test func quotaStopsNewDevicesAfterTheLimitAndTheGracePeriodOnly() throws {
            let bundleId = Self.bundle()
            try Jobs.registerApp(bundleId, policy: ["--mad-limit", "3", "--grace-days", "7"])
            let line = try Line("quota")
            let known = try Device()
            var n = 0
            func attest(_ device: Device) throws -> JSONValue {
                n += 1
                return try line.decide(Jobs.attestation(device, bundleId: bundleId, jobId: "quota-\(n)-\(bundleId)"))
            }
            let db = try Self.connection()
            let app = [PGValue.text(Jobs.teamId), .text(bundleId)]
            let events = { () throws -> [Int64] in
                let rows = try db.execute("SELECT threshold FROM mad_quota_events WHERE team_id = $1 AND bundle_id = $2 ORDER BY threshold", app)
                return (0..<rows.count).compactMap { rows.int($0, 0) }
            }
            #expect(try attest(known)["ok"] == .bool(true))
            #expect(try attest(Device())["ok"] == .bool(true))  // one below the limit
            #expect(try events() == [])
            #expect(try attest(Device())["ok"] == .bool(true))  // at the limit: 80% and 100% recorded, grace starts
            #expect(try events() == [80, 100])
            #expect(try attest(Device())["ok"] == .bool(true))  // over the limit, inside the grace period
            #expect(try events() == [80, 100])
            // The grace period began eight days ago.
            try db.execute(
                "UPDATE mad_quota_events SET reached_at = reached_at - interval '8 days' WHERE team_id = $1 AND bundle_id = $2", app)
            let refused = try attest(Device())
            #expect(refused["ok"] == .bool(false) && refused["code"] == .string("quota_exceeded"))
            #expect(refused["limit"] == .int(3) && refused["current"] == .int(4))
            // Devices counted this month keep working: a re-attestation and an assertion.
            #expect(try attest(known)["ok"] == .bool(true))
            let assertion = try line.decide(Jobs.assertion(known, bundleId: bundleId, jobId: "quota-asr-\(bundleId)", counter: 1))
            #expect(assertion["ok"] == .bool(true))
            #expect(try db.execute("SELECT devices FROM mad_totals WHERE team_id = $1 AND bundle_id = $2", app).int(0, 0) == 4)
            // Operators see each crossing once: a log line and a metric.
            #expect(line.worker.log.components(separatedBy: "monthly active device quota threshold crossed").count == 3)
            let metrics = try line.worker.get("/metrics").body
            #expect(metrics.contains("attest_mad_quota_thresholds_total{threshold=\"80\"} 1"))
            #expect(metrics.contains("attest_mad_quota_thresholds_total{threshold=\"100\"} 1"))
        }

        @Test func riskFactorsMoveTheStoredScoreAndACleanDeviceStaysTrusted() throws {
            let bundleId = Self.bundle()
            try Jobs.registerApp(bundleId, policy: ["--risk-weights", #"{"failed_assertion": 30}"#])
            let line = try Line("risk")
            let clean = try Device()
            let attested = try line.decide(Jobs.attestation(clean, bundleId: bundleId, jobId: "risk-clean-a-\(bundleId)"))
            let asserted = try line.decide(Jobs.assertion(clean, bundleId: bundleId, jobId: "risk-clean-s-\(bundleId)", counter: 1))
            for verdict in [attested, asserted] {
                let intelligence = try #require(verdict["deviceIntelligence"])
                #expect(intelligence["riskScore"] == .int(0) && intelligence["riskCategory"] == .string("trusted"))
                #expect(intelligence["deviceIntegrity"] == .string("high") && intelligence["jailbreakDetected"] == .bool(false))
                #expect(intelligence["factors"] == .array([]))
            }

            // A development-signed device that replays, fails, and regenerates its key: each step as documented.
            let fingerprint: [(String, JSONValue)] = [("deviceFingerprint", .string("fp-risky-\(bundleId)"))]
            let development = AttestationOptions(environment: .development)
            let risky = try Device()
            let regenerated = try Device()
            let steps: [([UInt8], Int64, [String])] = [
                (Jobs.attestation(risky, bundleId: bundleId, jobId: "risk-1-\(bundleId)", options: development, metadata: fingerprint),
                 25, ["development_build"]),
                (Jobs.assertion(risky, bundleId: bundleId, jobId: "risk-2-\(bundleId)", counter: 1), 25, ["development_build"]),
                (Jobs.assertion(risky, bundleId: bundleId, jobId: "risk-3-\(bundleId)", counter: 1), 40,
                 ["development_build", "counter_replay"]),
                (Jobs.assertion(risky, bundleId: bundleId, jobId: "risk-4-\(bundleId)", counter: 2, signer: clean), 70,
                 ["development_build", "counter_replay", "failed_assertion"]),
                // A certificate whose nonce does not certify the authenticator data is anyone's copy: no change.
                (Jobs.attestation(regenerated, bundleId: bundleId, jobId: "risk-5n-\(bundleId)",
                    options: AttestationOptions(environment: .development, nonce: .value(Array(repeating: 0, count: 32))), metadata: fingerprint),
                 70, ["development_build", "counter_replay", "failed_assertion"]),
                // A genuine attestation of the key for another App ID is the device's own doing.
                (Jobs.attestation(regenerated, bundleId: bundleId, jobId: "risk-5-\(bundleId)",
                    options: AttestationOptions(environment: .development, rpIdAppId: "OTHER12345.com.example.other"), metadata: fingerprint),
                 80, ["development_build", "counter_replay", "failed_attestation", "failed_assertion"]),
                (Jobs.attestation(regenerated, bundleId: bundleId, jobId: "risk-6-\(bundleId)", options: development, metadata: fingerprint),
                 90, ["development_build", "counter_replay", "failed_attestation", "failed_assertion", "key_churn"]),
            ]
            var deviceIds = Set<String>()
            for (job, score, factors) in steps {
                let verdict = try line.decide(job)
                let intelligence = try #require(verdict["deviceIntelligence"], "\(verdict)")
                #expect(intelligence["riskScore"] == .int(score), "\(verdict)")
                #expect(intelligence["riskCategory"] == .string(RiskCategory(score: Int(score)).rawValue))
                #expect(intelligence["jailbreakDetected"] == .bool(true))
                let names = intelligence["factors"].flatMap { if case .array(let items) = $0 { items.compactMap { $0["name"] } } else { nil } }
                #expect(names == factors.map(JSONValue.string), "\(verdict)")
                if case .string(let id)? = intelligence["deviceId"] { deviceIds.insert(id) }
            }
            #expect(deviceIds.count == 1)
            let db = try Self.connection()
            let device = [PGValue.text(Jobs.teamId), .text(bundleId), .text("fingerprint:fp-risky-\(bundleId)")]
            let stored = try db.execute(
                "SELECT score, category, attestations, keys FROM device_risk WHERE team_id = $1 AND bundle_id = $2 AND identity = $3", device)
            #expect(stored.int(0, 0) == 90 && stored.string(0, 1) == "blocked" && stored.int(0, 2) == 2 && stored.int(0, 3) == 2)
            let history = try db.execute(
                "SELECT score FROM device_risk_history WHERE team_id = $1 AND bundle_id = $2 AND identity = $3 ORDER BY id", device)
            #expect((0..<history.count).compactMap { history.int($0, 0) } == [25, 40, 70, 80, 90])
        }
    }
}
