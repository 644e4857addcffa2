import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Testing

extension LiveStack {
    /// Issue 11, items 4 and 7, against a real worker: backdated challenges, the broker-timestamp bound on
    /// receivedAt, and jobs built to make the challenge search quadratic.
    @Suite struct HardeningTimeTests {
        /// An attestation job presenting `challenge` (bound by SHA-256 of its bytes), minted and stamped at
        /// `receivedAt`, so that only the time bounds can refuse it.
        static func attestation(bundleId: String, jobId: String, challenge: String, receivedAt: Date) throws -> (key: [UInt8]?, value: [UInt8]) {
            let device = try Device()
            let cdh = Digest.sha256.hash(try #require(Base64.decode(challenge)))
            let minted = try Jobs.pki.mintAttestation(device: device, teamId: Jobs.teamId, bundleId: bundleId, clientDataHash: cdh, at: receivedAt)
            let keyId = Base64.encode(device.keyId)
            let json = JSONValue.object([
                ("jobId", .string(jobId)), ("kind", .string("attestation")), ("teamId", .string(Jobs.teamId)),
                ("bundleId", .string(bundleId)), ("keyId", .string(keyId)),
                ("attestationObject", .string(Base64.encode(minted.attestationObject))),
                ("clientDataHash", .string(Base64.encode(cdh))), ("challenge", .string(challenge)),
                ("receivedAt", .string(Jobs.timestamp(receivedAt))),
            ])
            return (Array(keyId.utf8), Array(json.serialized().utf8))
        }

        /// The issue time the database stamped on `challenge`.
        static func issuedAt(_ challenge: String, _ connection: PGConnection) throws -> Date {
            let rows = try connection.execute(
                "SELECT (extract(epoch FROM issued_at) * 1000000)::bigint FROM challenges WHERE challenge = $1",
                [.bytes(try #require(Base64.decode(challenge)))])
            return Date(timeIntervalSince1970: Double(try #require(rows.int(0, 0))) / 1e6)
        }

        static func usedBy(_ challenge: String, _ connection: PGConnection) throws -> String? {
            try connection.execute(
                "SELECT used_by_job FROM challenges WHERE challenge = $1", [.bytes(try #require(Base64.decode(challenge)))]
            ).string(0, 0)
        }

        /// (ok, code, reason) by jobId, failing when a job was published with different verdicts.
        static func outcomes(_ reader: TopicReader) -> [String: (ok: Bool, code: String?, reason: String?)] {
            var result = [String: (ok: Bool, code: String?, reason: String?)]()
            for (jobId, copies) in reader.verdictsByJob {
                #expect(Set(copies).count == 1, "\(jobId) published with different verdicts")
                let verdict = JSONValue.parse(Array(copies[0].utf8))
                result[jobId] = (verdict?["ok"] == .bool(true), verdict?["code"]?.stringValue, verdict?["reason"]?.stringValue)
            }
            return result
        }

        /// Backdated by 1 h, 23 h and just past the skew (61 s with the default 60): refused as not yet
        /// issued, and the challenge stays unconsumed, so the app's real job (produced after them) gets it.
        /// Just inside the skew (55 s) is accepted.
        @Test func backdatedJobsAreRefusedAndDoNotBurnTheChallenge() throws {
            let topics = try Stack.topics("backdate", partitions: 1)
            let bundleId = try ChallengeIntegrationTests.registerWorkerApp()
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            let connection = try PGConnection(conninfo: try Stack.databaseURL)
            let id = { (name: String) in "\(bundleId)-\(name)" }

            var messages = [(key: [UInt8]?, value: [UInt8])]()
            var challenges = [String: String]()
            for (name, secondsBack) in [("1h", 3_600.0), ("23h", 82_800.0), ("61s", 61.0)] {
                let challenge = try ChallengeIntegrationTests.issueByCLI(bundleId)
                challenges[name] = challenge
                let issued = try Self.issuedAt(challenge, connection)
                messages.append(try Self.attestation(
                    bundleId: bundleId, jobId: id("back-\(name)"), challenge: challenge, receivedAt: issued.addingTimeInterval(-secondsBack)))
                messages.append(try Self.attestation(bundleId: bundleId, jobId: id("real-\(name)"), challenge: challenge, receivedAt: Date()))
            }
            let inside = try ChallengeIntegrationTests.issueByCLI(bundleId)
            messages.append(try Self.attestation(
                bundleId: bundleId, jobId: id("inside"), challenge: inside, receivedAt: try Self.issuedAt(inside, connection).addingTimeInterval(-55)))
            try produce(topics.jobs, messages)

            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { $0.count >= messages.count }, "\(worker.log.suffix(2000))")
            let outcomes = Self.outcomes(verdicts)
            for name in ["1h", "23h", "61s"] {
                let back = outcomes[id("back-\(name)")]
                #expect(back?.ok == false && back?.code == "challenge_expired" && back?.reason == "challenge_not_yet_issued", "\(name): \(String(describing: back))")
                #expect(outcomes[id("real-\(name)")]?.ok == true, "\(name): the real job after the backdated one")
                #expect(try Self.usedBy(challenges[name]!, connection) == id("real-\(name)"))
            }
            #expect(outcomes[id("inside")]?.ok == true, "\(String(describing: outcomes[id("inside")]))")
        }

        /// With ATTEST_MAX_RECEIVED_BEFORE_BROKER=30: receivedAt 1 h, 23 h or 31 s before the broker's stamp
        /// is refused, 10 s before is admitted, and so are jobs that then waited in Kafka longer than the
        /// allowance before the worker started (queue lag never trips it).
        @Test func theBrokerTimestampBoundsABackdatedReceivedAt() throws {
            let topics = try Stack.topics("brokerts", partitions: 2)
            let bundleId = "com.example.brokerts.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            // The records are stamped 40 s ago, as if they had waited that long in the topic: "10s" is
            // consumed 50 s after its receivedAt, which only a bound measured at consumption would refuse.
            let stamped = Date().addingTimeInterval(-40)
            let cases: [(name: String, back: Double, ok: Bool)] = [
                ("1h", 3_600, false), ("23h", 82_800, false), ("31s", 31, false), ("10s", 10, true), ("0s", 0, true),
            ]
            let jobs = try cases.map { c in
                let device = try Device()
                return (key: Optional(Array(Base64.encode(device.keyId).utf8)),
                        value: Jobs.attestation(device, bundleId: bundleId, jobId: "\(bundleId)-\(c.name)", receivedAt: stamped.addingTimeInterval(-c.back)))
            }
            try produce(topics.jobs, jobs, timestampMs: Int64(stamped.timeIntervalSince1970 * 1000))
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_MAX_RECEIVED_BEFORE_BROKER": "30"])
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { $0.count >= cases.count }, "\(worker.log.suffix(2000))")
            let outcomes = Self.outcomes(verdicts)
            for c in cases {
                let outcome = outcomes["\(bundleId)-\(c.name)"]
                #expect(outcome?.ok == c.ok, "\(c.name): \(String(describing: outcome))")
                if !c.ok { #expect(outcome?.reason == "received_at_broker_mismatch", "\(c.name)") }
            }
            let deadLetters = try TopicReader(topic: topics.deadLetters)
            deadLetters.read(seconds: 2) { _ in false }
            #expect(deadLetters.messages.isEmpty, "nothing valid is dead-lettered")
        }

        /// An invalid setting stops the start with its name.
        @Test func anInvalidAllowanceStopsTheStart() throws {
            let topics = try Stack.topics("brokerts-bad", partitions: 1)
            for bad in ["-1", "soon", "1.5"] {
                let worker = try WorkerProcess(
                    topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_MAX_RECEIVED_BEFORE_BROKER": bad])
                #expect(worker.wait(seconds: 20), "worker started with \(bad)")
                #expect(worker.process.terminationStatus != 0)
                #expect(worker.log.contains("ATTEST_MAX_RECEIVED_BEFORE_BROKER"), "\(worker.log.suffix(500))")
            }
        }

        /// The reproduced attack (140,000 bytes of clientData, a 70,001-byte challenge) and the worst case
        /// under the 512-byte bound (a 512-byte near-match at every position), 60 of each, between an
        /// attestation and an assertion of a real device: all answered, with their own reasons, and the real ones
        /// accepted. How much work each costs is bounded by ChallengeBindingTests (comparison counts) and shown by
        /// `bench core`'s worst-case jobs, not timed here.
        @Test func hugeClientDataAssertionsAreRejectedFast() throws {
            let topics = try Stack.topics("quadratic", partitions: 1)
            let bundleId = "com.example.quadratic.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            let device = try Device()
            let key = Array(Base64.encode(device.keyId).utf8)
            let clientData = Base64.encode([UInt8](repeating: UInt8(ascii: "a"), count: 140_000))
            // Keys of their own: what the hostile jobs cost must not depend on whose risk history they touch.
            func hostile(_ n: Int, challenge: String) throws -> (key: [UInt8]?, value: [UInt8]) {
                let keyId = Base64.encode(try SecureRandom.bytes(32))
                let json = JSONValue.object([
                    ("jobId", .string("\(bundleId)-hostile-\(n)")), ("kind", .string("assertion")), ("teamId", .string(Jobs.teamId)),
                    ("bundleId", .string(bundleId)), ("keyId", .string(keyId)),
                    ("assertion", .string(Base64.encode([0xa0]))), ("clientData", .string(clientData)),
                    ("challenge", .string(challenge)), ("receivedAt", .string(Jobs.timestamp(Date()))),
                ])
                return (Array(keyId.utf8), Array(json.serialized().utf8))
            }
            let attack = String(repeating: "a", count: 70_000) + "b"
            let worst = String(repeating: "a", count: 511) + "b"
            var messages: [(key: [UInt8]?, value: [UInt8])] = [(key, Jobs.attestation(device, bundleId: bundleId, jobId: "\(bundleId)-att"))]
            for n in 0..<120 { messages.append(try hostile(n, challenge: n % 2 == 0 ? attack : worst)) }
            messages.append((key, Jobs.assertion(device, bundleId: bundleId, jobId: "\(bundleId)-asr", counter: 1)))
            try produce(topics.jobs, messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 120) { $0.count >= messages.count }, "\(worker.log.suffix(2000))")
            let outcomes = Self.outcomes(verdicts)
            #expect(outcomes["\(bundleId)-att"]?.ok == true && outcomes["\(bundleId)-asr"]?.ok == true)
            for n in 0..<120 {
                let outcome = outcomes["\(bundleId)-hostile-\(n)"]
                let expected = n % 2 == 0 ? ("challenge_invalid", "too_large") : ("client_data_hash_invalid", "challenge_mismatch")
                #expect(outcome?.ok == false && outcome?.code == expected.0 && outcome?.reason == expected.1, "\(n): \(String(describing: outcome))")
            }
        }
    }
}
