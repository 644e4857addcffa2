import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Testing

extension LiveStack {
    /// Issue 11 item 8 against a real worker: what anyone can send with a victim's keyId (public) or with
    /// its old objects does not count against it; what its own key or Apple vouches for does, within the
    /// failure window (docs/device-intelligence.md).
    @Suite struct HardeningRiskTests {
        typealias Line = DeviceIntelligenceIntegrationTests.Line
        /// Three days of job age, so a test can send jobs received before a whole failure window.
        static let extra = ["ATTEST_MAX_JOB_AGE": "259200"]

        static func app() throws -> String {
            let bundleId = "com.example.risk.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            return bundleId
        }

        /// The job with members replaced (nil: removed) or added.
        static func edit(_ job: [UInt8], _ changes: [(String, JSONValue?)]) -> [UInt8] {
            guard case .object(var members)? = JSONValue.parse(job) else { return job }
            for (name, value) in changes {
                if let i = members.firstIndex(where: { $0.0 == name }) {
                    if let value { members[i].1 = value } else { members.remove(at: i) }
                } else if let value {
                    members.append((name, value))
                }
            }
            return Array(JSONValue.object(members).serialized().utf8)
        }

        static func string(_ value: JSONValue?) -> String? { if case .string(let s)? = value { s } else { nil } }

        /// The object field's bytes with `change` applied, base64 again.
        static func bytes(of job: [UInt8], _ field: String, _ change: ([UInt8]) -> [UInt8]) -> [UInt8] {
            let original = Base64.decode(string(JSONValue.parse(job)?[field]) ?? "") ?? []
            return edit(job, [(field, .string(Base64.encode(change(original))))])
        }

        static func factorNames(_ verdict: JSONValue) -> [String] {
            guard case .array(let items)? = verdict["deviceIntelligence"]?["factors"] else { return [] }
            return items.compactMap { string($0["name"]) }
        }

        /// Publishes the jobs at once and waits for all their verdicts, by jobId.
        static func decideAll(_ line: Line, _ jobs: [[UInt8]]) throws -> [String: JSONValue] {
            let ids = jobs.compactMap { string(JSONValue.parse($0)?["jobId"]) }
            try produce(line.topics.jobs, jobs.map { job in (string(JSONValue.parse(job)?["keyId"]).map { Array($0.utf8) }, job) })
            let seen = line.reader.read(seconds: 120) { _ in ids.allSatisfy { line.reader.verdictsByJob[$0] != nil } }
            try #require(seen, "verdicts missing: \(line.worker.log.suffix(1500))")
            var verdicts = [String: JSONValue]()
            for id in ids { verdicts[id] = JSONValue.parse(Array(line.reader.verdictsByJob[id]![0].utf8)) }
            return verdicts
        }

        static func storedFailures(_ bundleId: String, _ device: Device) throws -> [Int64?] {
            let db = try DeviceIntelligenceIntegrationTests.connection()
            let rows = try db.execute(
                """
                SELECT failed_attestations, failed_assertions, counter_replays FROM device_risk
                WHERE team_id = $1 AND bundle_id = $2 AND identity = $3
                """, [.text(Jobs.teamId), .text(bundleId), .text("key:" + Hex.encode(device.keyId))])
            return [rows.int(0, 0), rows.int(0, 1), rows.int(0, 2)]
        }

        @Test func garbageCarryingAVictimsKeyIdLeavesItTrusted() throws {
            let bundleId = try Self.app()
            let line = try Line("risk-garbage", extra: Self.extra)
            let victim = try Device()
            let attacker = try Device()
            let otherPKI = try TestPKI.generate(
                validFrom: Date(timeIntervalSince1970: 1_577_836_800), validUntil: Date(timeIntervalSince1970: 2_366_841_600))
            #expect(try line.decide(Jobs.attestation(victim, bundleId: bundleId, jobId: "g-att-\(bundleId)"))["ok"] == .bool(true))
            #expect(try line.decide(Jobs.assertion(victim, bundleId: bundleId, jobId: "g-s1-\(bundleId)", counter: 1))["ok"] == .bool(true))

            let keyId = JSONValue.string(Base64.encode(victim.keyId))
            let now = Date()
            let attestation = { (name: String, options: AttestationOptions) in
                Jobs.attestation(victim, bundleId: bundleId, jobId: "g-\(name)-\(bundleId)", options: options)
            }
            let assertion = { (name: String, options: AssertionOptions) -> [UInt8] in
                let cdh = Digest.sha256.hash(Array("g-\(name)".utf8))
                let minted = try! victim.mintAssertion(
                    teamId: Jobs.teamId, bundleId: bundleId, clientDataHash: cdh, counter: 50, options: options)
                return Self.edit(Jobs.assertion(victim, bundleId: bundleId, jobId: "g-\(name)-\(bundleId)", counter: 50), [
                    ("assertion", .string(Base64.encode(minted.assertion))), ("clientDataHash", .string(Base64.encode(cdh))),
                ])
            }
            let plain = attestation("plain", AttestationOptions())
            let plainAssertion = assertion("plain-s", AssertionOptions())
            let expired = AttestationOptions(leafNotBefore: now.addingTimeInterval(-10 * 86_400), leafNotAfter: now.addingTimeInterval(-5 * 86_400))
            let cdh = Digest.sha256.hash(Array("g-chain".utf8))
            let foreignChain = try otherPKI.mintAttestation(
                device: victim, teamId: Jobs.teamId, bundleId: bundleId, clientDataHash: cdh, at: now)
            // jobId → the reason it must be rejected with; none of them says anything about the victim.
            var jobs = [([UInt8], String)]()
            func add(_ job: [UInt8], _ reason: String) { jobs.append((job, reason)) }
            // Attestations.
            add(Self.edit(plain, [("jobId", .string("g-a1-\(bundleId)")), ("attestationObject", .string("%%% not base64"))]), "malformed_base64")
            add(Self.edit(plain, [("jobId", .string("g-a2-\(bundleId)")), ("attestationObject", .string(Base64.encode([UInt8](repeating: 0xff, count: 300))))]), "malformed_cbor")
            add(Self.bytes(of: Self.edit(plain, [("jobId", .string("g-a3-\(bundleId)"))]), "attestationObject") { $0 + [0] }, "trailing_data")
            add(Self.edit(plain, [("jobId", .string("g-a4-\(bundleId)")), ("attestationObject", .string(Base64.encode([UInt8](repeating: 0xa0, count: 70_000))))]), "too_large")
            add(attestation("a5", AttestationOptions(nonce: .value([UInt8](repeating: 0, count: 32)))), "nonce_mismatch")
            add(attestation("a6", AttestationOptions(receipt: .raw([1, 2, 3]))), "receipt_invalid")
            add(attestation("a7", AttestationOptions(receipt: .absent)), "receipt_invalid")
            add(attestation("a8", expired), "certificate_expired")
            add(Self.edit(plain, [("jobId", .string("g-a9-\(bundleId)")), ("attestationObject", .string(Base64.encode(foreignChain.attestationObject))),
                ("clientDataHash", .string(Base64.encode(cdh)))]), "certificate_chain_invalid")
            add(attestation("a10", AttestationOptions(transformAuthData: { Array($0.prefix(30)) })), "malformed_cbor")
            // Another key's genuine attestation claiming the victim's keyId.
            add(Self.edit(Jobs.attestation(attacker, bundleId: bundleId, jobId: "g-a11-\(bundleId)"), [("keyId", keyId)]), "key_id_mismatch")
            add(Self.edit(plain, [("jobId", .string("g-a12-\(bundleId)")), ("challenge", .string(Base64.encode(Array("other".utf8))))]), "challenge_mismatch")
            add(Self.edit(plain, [("jobId", .string("g-a13-\(bundleId)")), ("clientDataHash", .string("%%%"))]), "malformed_base64")
            add(Self.edit(plain, [("jobId", .string("g-a14-\(bundleId)")), ("clientDataHash", nil)]), "missing_field")
            add(Jobs.attestation(victim, bundleId: bundleId, jobId: "g-a15-\(bundleId)", receivedAt: now.addingTimeInterval(-4 * 86_400)), "received_at_out_of_range")
            add(Self.edit(plain, [("jobId", .string("g-a16-\(bundleId)")), ("kind", .string("attest"))]), "invalid_field")
            // Assertions.
            add(Self.edit(plainAssertion, [("jobId", .string("g-s1b-\(bundleId)")), ("assertion", .string("%%%"))]), "malformed_base64")
            add(Self.edit(plainAssertion, [("jobId", .string("g-s2-\(bundleId)")), ("assertion", .string(Base64.encode([UInt8](repeating: 0xff, count: 120))))]), "malformed_cbor")
            add(Self.bytes(of: Self.edit(plainAssertion, [("jobId", .string("g-s3-\(bundleId)"))]), "assertion") { $0 + [0] }, "trailing_data")
            add(assertion("s4", AssertionOptions(transformAuthenticatorData: { Array($0.prefix(20)) })), "malformed_cbor")
            add(Self.edit(plainAssertion, [("jobId", .string("g-s5-\(bundleId)")), ("assertion", .string(Base64.encode([UInt8](repeating: 0xa2, count: 5000))))]), "too_large")
            add(Self.edit(plainAssertion, [("jobId", .string("g-s6-\(bundleId)")), ("challenge", .string(Base64.encode(Array("other".utf8))))]), "challenge_mismatch")
            add(Self.edit(plainAssertion, [("jobId", .string("g-s7-\(bundleId)")), ("clientDataHash", .string("%%%"))]), "malformed_base64")
            add(Self.edit(plainAssertion, [("jobId", .string("g-s8-\(bundleId)")), ("assertion", nil)]), "missing_field")
            add(Self.edit(plainAssertion, [("jobId", .string("g-s9-\(bundleId)")), ("receivedAt", .string(Jobs.timestamp(now.addingTimeInterval(-4 * 86_400))))]), "received_at_out_of_range")
            add(Self.edit(plainAssertion, [("jobId", .string("g-s10-\(bundleId)")), ("receivedAt", .string(Jobs.timestamp(now.addingTimeInterval(3600))))]), "received_at_out_of_range")
            // Each kind several times over: a count that would make the victim blocked if any of them counted.
            var all = [[UInt8]]()
            var expected = [String: String]()
            for round in 0..<3 {
                for (job, reason) in jobs {
                    let id = Self.string(JSONValue.parse(job)?["jobId"])! + "-\(round)"
                    all.append(Self.edit(job, [("jobId", .string(id))]))
                    expected[id] = reason
                }
            }
            let verdicts = try Self.decideAll(line, all)
            for (id, reason) in expected {
                #expect(verdicts[id]?["ok"] == .bool(false) && verdicts[id]?["reason"] == .string(reason), "\(id): \(String(describing: verdicts[id]))")
                if let intelligence = verdicts[id]?["deviceIntelligence"] {
                    #expect(Self.factorNames(verdicts[id]!).isEmpty, "\(id): \(intelligence)")
                }
            }

            let valid = try line.decide(Jobs.assertion(victim, bundleId: bundleId, jobId: "g-s-final-\(bundleId)", counter: 2))
            #expect(valid["ok"] == .bool(true), "\(valid)")
            #expect(valid["deviceIntelligence"]?["riskCategory"] == .string("trusted"))
            #expect(valid["deviceIntelligence"]?["riskScore"] == .int(0))
            #expect(Self.factorNames(valid).isEmpty, "\(valid)")
            #expect(try Self.storedFailures(bundleId, victim) == [0, 0, 0])
        }

        @Test func whatTheDevicesKeyVouchesForCountsAndForgedSignaturesAreBounded() throws {
            let bundleId = try Self.app()
            let line = try Line("risk-evidence", extra: Self.extra)
            let victim = try Device()
            let forger = try Device()
            #expect(try line.decide(Jobs.attestation(victim, bundleId: bundleId, jobId: "e-att-\(bundleId)"))["ok"] == .bool(true))
            // Forged bad signatures need only the keyId: they count, but at most 4 × 5 points with the default
            // weights, which leaves a clean device trusted.
            let forged = try Self.decideAll(line, (0..<10).map {
                Jobs.assertion(victim, bundleId: bundleId, jobId: "e-f\($0)-\(bundleId)", counter: UInt32(100 + $0), signer: forger)
            })
            #expect(forged.values.allSatisfy { $0["reason"] == .string("signature_invalid") })
            let afterForgeries = try line.decide(Jobs.assertion(victim, bundleId: bundleId, jobId: "e-s1-\(bundleId)", counter: 1))
            #expect(afterForgeries["ok"] == .bool(true))
            #expect(afterForgeries["deviceIntelligence"]?["riskCategory"] == .string("trusted"))
            #expect(afterForgeries["deviceIntelligence"]?["factors"] == .array([
                .object([("name", .string("failed_assertion")), ("points", .int(20)), ("value", .int(10))]),
            ]))
            // A genuine replay (the device's own signature, an old counter) counts.
            let replay = try line.decide(Jobs.assertion(victim, bundleId: bundleId, jobId: "e-r1-\(bundleId)", counter: 1))
            #expect(replay["reason"] == .string("counter_not_increasing"))
            #expect(Self.factorNames(replay) == ["counter_replay", "failed_assertion"])
            #expect(replay["deviceIntelligence"]?["riskScore"] == .int(35))
            #expect(try Self.storedFailures(bundleId, victim) == [0, 10, 1])
            // A genuine attestation of a key for another App ID counts against that key's device.
            let other = try Device()
            let misdirected = try line.decide(Jobs.attestation(
                other, bundleId: bundleId, jobId: "e-rp-\(bundleId)", options: AttestationOptions(rpIdAppId: "OTHER12345.com.example.other")))
            #expect(misdirected["reason"] == .string("rp_id_mismatch"))
            #expect(Self.factorNames(misdirected) == ["failed_attestation"])
        }

        /// Apps whose challenges the worker issues: a captured job sent again stops at its spent challenge,
        /// which does not count, so neither its replayed counter nor its attestation moves the score.
        @Test func capturedJobsSentAgainToAWorkerChallengeAppDoNotCount() throws {
            typealias Challenges = ChallengeIntegrationTests
            let bundleId = try Challenges.registerWorkerApp()
            let line = try Line("risk-captured", extra: Self.extra)
            let victim = try Device()
            let attestation = try Challenges.attestation(
                bundleId: bundleId, jobId: "c-att-\(bundleId)", challenge: try Challenges.issueByCLI(bundleId), device: victim).value
            #expect(try line.decide(attestation)["ok"] == .bool(true))
            let assertion = { (jobId: String, counter: UInt32, challenge: String) throws -> [UInt8] in
                let cdh = Digest.sha256.hash(try #require(Base64.decode(challenge)))
                let minted = try victim.mintAssertion(teamId: Jobs.teamId, bundleId: bundleId, clientDataHash: cdh, counter: counter)
                return Self.edit(Jobs.assertion(victim, bundleId: bundleId, jobId: jobId, counter: counter), [
                    ("assertion", .string(Base64.encode(minted.assertion))), ("clientDataHash", .string(Base64.encode(cdh))),
                    ("challenge", .string(challenge)),
                ])
            }
            let captured = try assertion("c-s1-\(bundleId)", 1, try Challenges.issueByCLI(bundleId))
            #expect(try line.decide(captured)["ok"] == .bool(true))
            let unknown = Base64.encode([UInt8](repeating: 7, count: 32))
            let replays = try Self.decideAll(line, (0..<4).flatMap { n in [
                Self.edit(captured, [("jobId", .string("c-r\(n)-\(bundleId)"))]),
                Self.edit(attestation, [("jobId", .string("c-ra\(n)-\(bundleId)"))]),
                Self.edit(captured, [("jobId", .string("c-u\(n)-\(bundleId)")), ("challenge", .string(unknown))]),
                Self.edit(captured, [("jobId", .string("c-m\(n)-\(bundleId)")), ("challenge", nil)]),
            ] })
            for (id, verdict) in replays {
                let expected = id.hasPrefix("c-u") ? "challenge_unknown" : id.hasPrefix("c-m") ? "missing_field" : "challenge_already_used"
                #expect(verdict["reason"] == .string(expected), "\(id): \(verdict)")
                #expect(Self.factorNames(verdict).isEmpty, "\(id): \(verdict)")
            }
            let next = try line.decide(try assertion("c-s2-\(bundleId)", 2, try Challenges.issueByCLI(bundleId)))
            #expect(next["ok"] == .bool(true), "\(next)")
            #expect(next["deviceIntelligence"]?["riskScore"] == .int(0) && Self.factorNames(next).isEmpty)
            #expect(next["deviceIntelligence"]?["attestationCount"] == .int(1))
            #expect(try Self.storedFailures(bundleId, victim) == [0, 0, 0])
        }

        @Test func aDeviceIsTrustedAgainOnceItsFailureWindowHasPassed() throws {
            let bundleId = try Self.app()
            let line = try Line("risk-window", extra: Self.extra)
            let device = try Device()
            let then = Date().addingTimeInterval(-50 * 3600)
            #expect(try line.decide(Jobs.attestation(device, bundleId: bundleId, jobId: "d-att-\(bundleId)", receivedAt: then))["ok"] == .bool(true))
            #expect(try line.decide(Jobs.assertion(device, bundleId: bundleId, jobId: "d-s1-\(bundleId)", counter: 1, receivedAt: then))["ok"] == .bool(true))
            var last = JSONValue.null
            for n in 0..<4 {
                last = try line.decide(Jobs.assertion(
                    device, bundleId: bundleId, jobId: "d-r\(n)-\(bundleId)", counter: 1, receivedAt: then.addingTimeInterval(Double(60 * (n + 1)))))
                #expect(last["reason"] == .string("counter_not_increasing"))
            }
            #expect(last["deviceIntelligence"]?["riskScore"] == .int(60) && last["deviceIntelligence"]?["riskCategory"] == .string("suspicious"))
            // Within the window (23 hours after its first replay) the replays still count ...
            let inside = try line.decide(Jobs.assertion(device, bundleId: bundleId, jobId: "d-s2-\(bundleId)", counter: 2,
                receivedAt: then.addingTimeInterval(60 + 23 * 3600)))
            #expect(inside["ok"] == .bool(true) && inside["deviceIntelligence"]?["riskScore"] == .int(60))
            // ... and once it has passed (a second after: the edge itself is RiskWindowStoreTests') the device is
            // trusted again, with nothing to explain.
            let after = try line.decide(Jobs.assertion(device, bundleId: bundleId, jobId: "d-s3-\(bundleId)", counter: 3,
                receivedAt: then.addingTimeInterval(61 + 24 * 3600)))
            #expect(after["ok"] == .bool(true))
            #expect(after["deviceIntelligence"]?["riskScore"] == .int(0) && after["deviceIntelligence"]?["riskCategory"] == .string("trusted"))
            #expect(Self.factorNames(after).isEmpty)
            // A new replay opens a new window and counts once.
            let again = try line.decide(Jobs.assertion(device, bundleId: bundleId, jobId: "d-r9-\(bundleId)", counter: 3))
            #expect(again["reason"] == .string("counter_not_increasing") && again["deviceIntelligence"]?["riskScore"] == .int(15))
            #expect(try Self.storedFailures(bundleId, device) == [0, 0, 1])
        }
    }
}
