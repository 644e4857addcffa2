import AttestCore
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Testing

extension LiveStack {
    /// Issue 11 items 1, 6 and 11 against real workers: one app identity (the exact registered pair keys
    /// policies, counts and quotas), jobIds scoped by app and honest about reuse, and the app's environments
    /// binding assertions as well as attestations.
    @Suite struct HardeningIdentityTests {
        static func bundle(_ name: String) -> String { "com.example.\(name).\(UUID().uuidString.prefix(8).lowercased())" }

        /// `attest-worker ARGS…`: its exit status and stdout.
        @discardableResult
        static func cli(_ arguments: [String]) throws -> (status: Int32, output: String) {
            try Stack.run(Stack.binary, arguments, capture: true)
        }

        static func register(_ bundleId: String, _ policy: [String]) throws {
            for arguments in [["migrate"], ["app", "add", "--team", Jobs.teamId, "--bundle", bundleId] + policy] {
                try #require(try cli(arguments).status == 0, "attest-worker \(arguments.joined(separator: " ")) failed")
            }
        }

        /// `job` with its teamId and bundleId replaced (the attestation inside still names the registered App ID).
        static func respelled(_ job: [UInt8], team: String, bundle: String) -> [UInt8] {
            guard case .object(let members)? = JSONValue.parse(job) else { return job }
            let fields = members.map { name, value -> (String, JSONValue) in
                name == "teamId" ? (name, .string(team)) : name == "bundleId" ? (name, .string(bundle)) : (name, value)
            }
            return Array(JSONValue.object(fields).serialized().utf8)
        }

        /// Publishes `job` on `line` and returns the verdict it gets: the newest under its jobId, which other
        /// apps' jobs may share.
        static func decide(_ job: [UInt8], on line: DeviceIntelligenceIntegrationTests.Line) throws -> JSONValue {
            let jobId = try #require(string(JSONValue.parse(job)?["jobId"]))
            let before = line.reader.verdictsByJob[jobId]?.count ?? 0
            try produce(line.topics.jobs, [keyed(job)])
            let seen = line.reader.read(seconds: 60) { _ in line.reader.verdictsByJob[jobId]?.count ?? 0 > before }
            try #require(seen, "no verdict for \(jobId): \(line.worker.log.suffix(1500))")
            return try #require(JSONValue.parse(Array(line.reader.verdictsByJob[jobId]![before].utf8)))
        }

        static func string(_ value: JSONValue?) -> String? { if case .string(let s)? = value { s } else { nil } }

        static func keyed(_ job: [UInt8]) -> (key: [UInt8]?, value: [UInt8]) {
            (string(JSONValue.parse(job)?["keyId"]).map { Array($0.utf8) }, job)
        }

        /// The split and malformed spellings of (ITEST12345, `bundleId`) a producer can send, with the reason each
        /// must get: a field that is not an App ID prefix or bundle identifier, or a valid pair never registered.
        static func spellings(of bundleId: String) -> [(team: String, bundle: String, reason: String)] {
            let rest = String(bundleId.dropFirst("com.".count))
            let t = Jobs.teamId
            return [
                (t + ".com", rest, "invalid_field"), (t + ".com.example", String(rest.dropFirst("example.".count)), "invalid_field"),
                (t + "." + bundleId, "x", "invalid_field"), (t.lowercased(), bundleId, "invalid_field"),
                (" " + t, bundleId, "invalid_field"), (t + " ", bundleId, "invalid_field"), (t + "\u{0}", bundleId, "invalid_field"),
                (String(t.dropLast()), String(t.suffix(1)) + "." + bundleId, "invalid_field"), ("ІTEST12345", bundleId, "invalid_field"),
                (t, bundleId + ".", "invalid_field"), (t, "." + bundleId, "invalid_field"),
                (t, bundleId.replacingOccurrences(of: ".", with: ".."), "invalid_field"), (t, bundleId + " ", "invalid_field"),
                (t, bundleId.replacingOccurrences(of: "e", with: "е"), "invalid_field"), (t, bundleId + "\u{0}", "invalid_field"),
                (t, bundleId.replacingOccurrences(of: ".", with: "\u{FF0E}"), "invalid_field"), (t, "", "invalid_field"),
                ("", bundleId, "invalid_field"), (t, bundleId.uppercased(), "unknown_app"), ("ITEST12346", bundleId, "unknown_app"),
                // Underscores are a bundle identifier's, so these are valid pairs, just not the registered one.
                (t, bundleId.replacingOccurrences(of: ".", with: "_"), "unknown_app"), (t, bundleId + "_", "unknown_app"),
            ]
        }

        /// Billing bypass: a valid attestation under any other spelling of a registered App ID is refused and counted
        /// nowhere; the exact pair is counted once under its own quota, which then stops the next device. Also with
        /// unknown apps admitted, where a valid unregistered pair fails Apple's rpIdHash instead.
        @Test(arguments: [false, true])
        func splitAndMalformedAppIdsAreNeverAcceptedNorCountedAndTheQuotaHolds(admitUnknownApps: Bool) throws {
            let bundleId = Self.bundle("split")
            try Self.register(bundleId, ["--mad-limit", "1", "--grace-days", "0"])
            let topics = try Stack.topics("split")
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_ADMIT_UNKNOWN_APPS": String(admitUnknownApps)])
            let spellings = Self.spellings(of: bundleId)
            var messages = [(key: [UInt8]?, value: [UInt8])]()
            for (n, spelling) in spellings.enumerated() {
                let job = Jobs.attestation(try Device(), bundleId: bundleId, jobId: "split-\(n)-\(bundleId)")
                messages.append(Self.keyed(Self.respelled(job, team: spelling.team, bundle: spelling.bundle)))
            }
            try produce(topics.jobs, messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { $0.count >= spellings.count }, "\(worker.log.suffix(1500))")
            for (n, spelling) in spellings.enumerated() {
                let copies = try #require(verdicts.verdictsByJob["split-\(n)-\(bundleId)"], "no verdict for \(spelling)")
                let verdict = try #require(JSONValue.parse(Array(copies[0].utf8)))
                let reason = admitUnknownApps && spelling.reason == "unknown_app" ? "rp_id_mismatch" : spelling.reason
                #expect(verdict["ok"] == .bool(false), "\(spelling)")
                #expect(verdict["reason"] == .string(reason), "\(spelling): \(copies[0])")
            }
            // The exact pair: the first device is counted, the second is over the limit of 1.
            let device = try Device()
            try produce(topics.jobs, [Self.keyed(Jobs.attestation(device, bundleId: bundleId, jobId: "exact-1-\(bundleId)"))])
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob["exact-1-\(bundleId)"] != nil })
            // Its assertions under other spellings are refused too and move nothing; under the exact pair, accepted.
            let assertionSpellings = spellings.filter { $0.reason == "unknown_app" } + spellings.prefix(4)
            var assertions = [(key: [UInt8]?, value: [UInt8])]()
            for (n, spelling) in assertionSpellings.enumerated() {
                let job = Jobs.assertion(device, bundleId: bundleId, jobId: "split-asr-\(n)-\(bundleId)", counter: 1)
                assertions.append(Self.keyed(Self.respelled(job, team: spelling.team, bundle: spelling.bundle)))
            }
            assertions.append(Self.keyed(Jobs.assertion(device, bundleId: bundleId, jobId: "exact-asr-\(bundleId)", counter: 1)))
            try produce(topics.jobs, assertions)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob["exact-asr-\(bundleId)"] != nil })
            for (n, spelling) in assertionSpellings.enumerated() {
                let copies = try #require(verdicts.verdictsByJob["split-asr-\(n)-\(bundleId)"], "no verdict for \(spelling)")
                let reason = admitUnknownApps && spelling.reason == "unknown_app" ? "unknown_key" : spelling.reason
                #expect(JSONValue.parse(Array(copies[0].utf8))?["reason"] == .string(reason), "assertion \(spelling): \(copies[0])")
            }
            let accepted = verdicts.verdictsByJob["exact-asr-\(bundleId)"]?.first.flatMap { JSONValue.parse(Array($0.utf8)) }
            #expect(accepted?["ok"] == .bool(true), "\(String(describing: accepted))")
            try produce(topics.jobs, [
                Self.keyed(Jobs.attestation(try Device(), bundleId: bundleId, jobId: "exact-2-\(bundleId)")),
            ])
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob["exact-2-\(bundleId)"] != nil })
            let byJob = verdicts.verdictsByJob
            #expect(byJob["exact-1-\(bundleId)"].flatMap { JSONValue.parse(Array($0[0].utf8))?["ok"] } == .bool(true))
            #expect(byJob["exact-2-\(bundleId)"].flatMap { JSONValue.parse(Array($0[0].utf8))?["reason"] } == .string("quota_exceeded"))

            let db = try PGConnection(conninfo: try Stack.databaseURL)
            let suffix = String(bundleId.suffix(8))
            // Counted once, under the registered pair, and under no other spelling.
            let counted = try db.execute(
                "SELECT team_id, bundle_id, count(*) FROM mad_devices WHERE bundle_id LIKE '%' || $1 || '%' GROUP BY 1, 2", [.text(suffix)])
            #expect(counted.count == 1 && counted.string(0, 0) == Jobs.teamId && counted.string(0, 1) == bundleId && counted.int(0, 2) == 1)
            #expect(try db.execute("SELECT count(*) FROM mad_totals WHERE bundle_id LIKE '%' || $1 || '%'", [.text(suffix)]).int(0, 0) == 1)
            #expect(try db.execute("SELECT count(*) FROM devices WHERE bundle_id LIKE '%' || $1 || '%'", [.text(suffix)]).int(0, 0) == 1)
            let quota = try db.execute(
                "SELECT threshold FROM mad_quota_events WHERE team_id = $1 AND bundle_id = $2 ORDER BY 1", [.text(Jobs.teamId), .text(bundleId)])
            #expect((0..<quota.count).map { quota.int($0, 0) } == [80, 100])
            // Refused jobs are verdicts, not dead letters.
            let dead = try TopicReader(topic: topics.deadLetters)
            dead.read(seconds: 2) { _ in false }
            #expect(dead.messages.isEmpty)
            try validate(verdicts.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "verdict")
            #expect(worker.process.isRunning)
        }

        /// The operator side: app add|set, challenge new and mad --app refuse what jobs would be refused for.
        @Test func theCommandLineRefusesSpellingsThatAreNotAnAppIdPrefixAndABundleIdentifier() throws {
            let bundleId = Self.bundle("cli")
            try Self.register(bundleId, [])
            for spelling in Self.spellings(of: bundleId) where spelling.reason != "unknown_app" && !spelling.team.contains("\u{0}")
                && !spelling.bundle.contains("\u{0}")
            {
                for command in ["add", "set"] {
                    let result = try Self.cli(["app", command, "--team", spelling.team, "--bundle", spelling.bundle])
                    #expect(result.status == 2, "app \(command) \(spelling)")
                }
                #expect(try Self.cli(["challenge", "new", "--team", spelling.team, "--bundle", spelling.bundle]).status == 2, "\(spelling)")
            }
            // mad --app takes the joined App ID: the team has no dot, so the first one splits it, and both halves must
            // be valid.
            for app in [
                "itest12345.com.x", "ITEST1234.com.x", "ITEST12345.", "ITEST12345", ".com.x", "ITEST12345.com..x", "ITEST12345 .com.x",
                "ITEST12345.com.x.", "ITEST12345.com.еxample",
            ] {
                #expect(try Self.cli(["mad", "--app", app]).status == 2, "mad --app \(app)")
            }
            // Nothing was registered under another spelling, and the exact pair still works.
            let db = try PGConnection(conninfo: try Stack.databaseURL)
            let suffix = String(bundleId.suffix(8))
            #expect(try db.execute("SELECT count(*) FROM apps WHERE bundle_id LIKE '%' || $1 || '%'", [.text(suffix)]).int(0, 0) == 1)
            #expect(try Self.cli(["app", "set", "--team", Jobs.teamId, "--bundle", bundleId, "--mad-limit", "5"]).status == 0)
            #expect(try Self.cli(["challenge", "new", "--team", Jobs.teamId, "--bundle", bundleId]).status == 0)
            #expect(try Self.cli(["mad", "--app", "\(Jobs.teamId).\(bundleId)"]).status == 0)
        }

        /// A leaked verdict: app B's job under app A's jobId is B's own job; a reuse within app A (another device,
        /// other content) gets job_id_reused built from its own job while the stored decision stands; the original
        /// redelivered gets its stored verdict byte for byte; two workers deciding both contents concurrently agree.
        @Test func jobIdsAreScopedByAppAndAReuseIsRejectedOnItsOwn() throws {
            let appA = Self.bundle("scope-a")
            let appB = Self.bundle("scope-b")
            try Self.register(appA, ["--environments", "any"])
            try Self.register(appB, ["--environments", "any"])
            let line = try DeviceIntelligenceIntegrationTests.Line("scope")
            let jobId = "order-42-\(appA.suffix(8))"
            let deviceA = try Device()
            let original = Jobs.attestation(deviceA, bundleId: appA, jobId: jobId)
            let a = try line.decide(original)
            #expect(a["ok"] == .bool(true))
            let deviceB = try Device()
            let b = try Self.decide(Jobs.attestation(deviceB, bundleId: appB, jobId: jobId), on: line)
            #expect(b["ok"] == .bool(true), "\(b)")
            #expect(b["bundleId"] == .string(appB))
            #expect(b["keyId"] == .string(Base64.encode(deviceB.keyId)))
            #expect(b["publicKey"] == .string(Base64.encode(deviceB.publicKeyX962)))

            // Same app, same jobId, another device: its own rejection, keyed by its own keyId.
            let intruder = try Device()
            try produce(line.topics.jobs, [Self.keyed(Jobs.attestation(intruder, bundleId: appA, jobId: jobId))])
            #expect(line.reader.read(seconds: 60) { _ in line.reader.verdictsByJob[jobId]?.count ?? 0 >= 3 })
            let reuse = try #require(line.reader.messages.last { msg in
                JSONValue.parse(msg.value)?["keyId"] == .string(Base64.encode(intruder.keyId))
            })
            let reused = try #require(JSONValue.parse(reuse.value))
            #expect(reused["code"] == .string("job_invalid") && reused["reason"] == .string("job_id_reused"), "\(reused)")
            #expect(reused["bundleId"] == .string(appA) && reused["publicKey"] == nil)
            #expect(reuse.key == Array(Base64.encode(intruder.keyId).utf8))
            // The original, redelivered: the first verdict, byte for byte.
            let firstA = line.reader.messages.first { JSONValue.parse($0.value)?["keyId"] == .string(Base64.encode(deviceA.keyId)) }!.value
            try produce(line.topics.jobs, [Self.keyed(original)])
            #expect(line.reader.read(seconds: 60) { _ in line.reader.verdictsByJob[jobId]?.count ?? 0 >= 4 })
            #expect(Array(line.reader.verdictsByJob[jobId]![3].utf8) == firstA)

            let db = try PGConnection(conninfo: try Stack.databaseURL)
            let rows = try db.execute(
                "SELECT bundle_id, verdict_json FROM verdicts WHERE team_id = $1 AND job_id = $2 ORDER BY bundle_id", [.text(Jobs.teamId), .text(jobId)])
            #expect(rows.count == 2)
            let storedA = (0..<rows.count).first { rows.string($0, 0) == appA }.flatMap { rows.string($0, 1) }
            #expect(storedA.map { Array($0.utf8) } == firstA, "the first decision stands")
            #expect(try db.execute("SELECT count(*) FROM devices WHERE key_id = $1", [.bytes(intruder.keyId)]).int(0, 0) == 0)
            let metrics = try line.worker.get("/metrics").body
            #expect(metrics.contains("attest_job_id_reused_total 1\n"), "\(metrics)")
            #expect(line.worker.log.contains("jobId reused with other content"))
        }

        @Test func twoWorkersDecidingTwoContentsOfOneJobIdStoreOneAndRejectTheOther() throws {
            let bundleId = Self.bundle("reuse2")
            try Self.register(bundleId, ["--environments", "any"])
            let topics = try Stack.topics("reuse2")
            var messages = [(key: [UInt8]?, value: [UInt8])]()
            for n in 0..<12 {
                // Each jobId twice, by two devices (other content), within one produce: one batch or two, one
                // worker or both, exactly one of them is the decision.
                for _ in 0..<2 { messages.append(Self.keyed(Jobs.attestation(try Device(), bundleId: bundleId, jobId: "dup-\(n)-\(bundleId)"))) }
            }
            let first = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            let second = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            try produce(topics.jobs, messages + messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 90) { $0.count >= 4 * messages.count }, "\(first.log.suffix(1500))\n\(second.log.suffix(1500))")
            let db = try PGConnection(conninfo: try Stack.databaseURL)
            let stored = try db.execute(
                "SELECT job_id, verdict_json FROM verdicts WHERE team_id = $1 AND bundle_id = $2", [.text(Jobs.teamId), .text(bundleId)])
            #expect(stored.count == 12)
            let storedByJob = Dictionary(uniqueKeysWithValues: (0..<stored.count).map { (stored.string($0, 0)!, stored.string($0, 1)!) })
            for (jobId, copies) in verdicts.verdictsByJob {
                let decided = try #require(storedByJob[jobId])
                let storedKey = JSONValue.parse(Array(decided.utf8))?["keyId"]
                for copy in copies {
                    let verdict = try #require(JSONValue.parse(Array(copy.utf8)))
                    if verdict["keyId"] == storedKey {
                        #expect(copy == decided, "the stored content's copies get the stored verdict")
                    } else {
                        #expect(verdict["reason"] == .string("job_id_reused"), "\(copy)")
                    }
                }
            }
            #expect(try db.execute("SELECT count(*) FROM mad_devices WHERE team_id = $1 AND bundle_id = $2", [.text(Jobs.teamId), .text(bundleId)]).int(0, 0) == 12)
        }

        /// Policy on assertions: a key attested in development keeps asserting while the app admits any
        /// environment, is refused as on the attestation path once `app set --environments production` reaches
        /// the worker, and is accepted again (its counter unmoved) when development is admitted again.
        @Test func aDevelopmentKeysAssertionsFollowTheAppsEnvironments() throws {
            let bundleId = Self.bundle("env")
            try Self.register(bundleId, ["--environments", "any"])
            let line = try DeviceIntelligenceIntegrationTests.Line("env")
            let dev = try Device()
            let prod = try Device()
            let id = String(bundleId.suffix(8))
            let options = AttestationOptions(environment: .development)
            #expect(try line.decide(Jobs.attestation(dev, bundleId: bundleId, jobId: "dev-att-\(id)", options: options))["environment"] == .string("development"))
            #expect(try line.decide(Jobs.attestation(prod, bundleId: bundleId, jobId: "prod-att-\(id)"))["ok"] == .bool(true))
            #expect(try line.decide(Jobs.assertion(dev, bundleId: bundleId, jobId: "dev-1-\(id)", counter: 1))["ok"] == .bool(true))

            let set = { (environments: String) throws in
                try #require(try Self.cli(["app", "set", "--team", Jobs.teamId, "--bundle", bundleId, "--environments", environments]).status == 0)
                Thread.sleep(forTimeInterval: 6)  // waits: 6 s, for the workers' re-read of apps (every 5 s)
            }
            try set("production")
            let refused = try line.decide(Jobs.assertion(dev, bundleId: bundleId, jobId: "dev-2-\(id)", counter: 2))
            #expect(refused["code"] == .string("apple_validation_failed") && refused["reason"] == .string("environment_not_allowed"), "\(refused)")
            #expect(refused["token"] == nil && refused["counter"] == nil)
            #expect(try line.decide(Jobs.assertion(prod, bundleId: bundleId, jobId: "prod-1-\(id)", counter: 1))["ok"] == .bool(true))
            // A forged assertion under the development key is still a signature failure, not an environment one.
            let forged = try line.decide(Jobs.assertion(dev, bundleId: bundleId, jobId: "dev-f-\(id)", counter: 5, signer: prod))
            #expect(forged["reason"] == .string("signature_invalid"), "\(forged)")
            let db = try PGConnection(conninfo: try Stack.databaseURL)
            #expect(try db.execute("SELECT counter FROM devices WHERE key_id = $1", [.bytes(dev.keyId)]).int(0, 0) == 1)

            try set("development")
            #expect(try line.decide(Jobs.assertion(prod, bundleId: bundleId, jobId: "prod-2-\(id)", counter: 2))["reason"] == .string("environment_not_allowed"))
            #expect(try line.decide(Jobs.assertion(dev, bundleId: bundleId, jobId: "dev-3-\(id)", counter: 2))["ok"] == .bool(true))
        }
    }
}
