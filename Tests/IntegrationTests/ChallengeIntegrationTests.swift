import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import Foundation
import PostgresClient
import Testing

extension LiveStack {
    /// Worker-issued challenges end to end (CONTRACT 7 "Challenges"): issued over HTTP or by `challenge new`,
    /// consumed once across workers, expiring at receivedAt, and redeliveries keeping their verdicts.
    @Suite struct ChallengeIntegrationTests {
        /// Registers a fresh app whose challenges the worker issues.
        static func registerWorkerApp() throws -> String {
            let bundleId = "com.example.chal.\(UUID().uuidString.prefix(8).lowercased())"
            for arguments in [
                ["migrate"],
                ["app", "add", "--team", Jobs.teamId, "--bundle", bundleId, "--environments", "any", "--challenges", "worker"],
            ] {
                let status = try Stack.run(Stack.binary, arguments)
                try #require(status == 0, "attest-worker \(arguments.joined(separator: " ")) failed")
            }
            return bundleId
        }

        /// `attest-worker challenge new`: the challenge it prints.
        static func issueByCLI(_ bundleId: String) throws -> String {
            let result = try Stack.run(Stack.binary, ["challenge", "new", "--team", Jobs.teamId, "--bundle", bundleId], capture: true)
            try #require(result.status == 0)
            return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// An attestation job presenting `challenge`, its clientDataHash SHA-256 of the challenge's bytes.
        static func attestation(bundleId: String, jobId: String, challenge: String, device: Device? = nil) throws -> (key: [UInt8]?, value: [UInt8]) {
            let device = try device ?? Device()
            let cdh = Digest.sha256.hash(try #require(Base64.decode(challenge)))
            let minted = try Jobs.pki.mintAttestation(device: device, teamId: Jobs.teamId, bundleId: bundleId, clientDataHash: cdh, at: Date())
            let keyId = Base64.encode(device.keyId)
            let json = JSONValue.object([
                ("jobId", .string(jobId)), ("kind", .string("attestation")), ("teamId", .string(Jobs.teamId)),
                ("bundleId", .string(bundleId)), ("keyId", .string(keyId)),
                ("attestationObject", .string(Base64.encode(minted.attestationObject))),
                ("clientDataHash", .string(Base64.encode(cdh))), ("challenge", .string(challenge)), ("receivedAt", .string(Jobs.timestamp(Date()))),
            ])
            return (Array(keyId.utf8), Array(json.serialized().utf8))
        }

        /// The verdicts' (ok, code) by jobId, failing when a job was published with different verdicts.
        static func outcomes(_ reader: TopicReader) -> [String: (ok: Bool, code: String?)] {
            var result = [String: (ok: Bool, code: String?)]()
            for (jobId, copies) in reader.verdictsByJob {
                #expect(Set(copies).count == 1, "\(jobId) published with different verdicts")
                let verdict = JSONValue.parse(Array(copies[0].utf8))
                result[jobId] = (verdict?["ok"] == .bool(true), verdict?["code"]?.stringValue)
            }
            return result
        }

        @Test func issuedOverHTTPConsumedOnceExpiredAtReceivedAtAndRateLimited() throws {
            let topics = try Stack.topics("chal", partitions: 3)
            let bundleId = try Self.registerWorkerApp()
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)",
                extra: ["ATTEST_CHALLENGES_PER_MINUTE": "1", "ATTEST_CHALLENGE_BURST": "3"])
            let body = #"{"teamId":"\#(Jobs.teamId)","bundleId":"\#(bundleId)"}"#
            let key = try addAPIKey(bundleId)

            let created = try worker.post("/v1/challenges", body, bearer: key)
            #expect(created.status == 201, "\(created.body)")
            let issued = try #require(JSONValue.parse(Array(created.body.utf8)))
            let challenge = try #require(issued["challenge"]?.stringValue)
            #expect(Base64.decode(challenge)?.count == 32)
            let expiresAt = try #require(issued["expiresAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)))
            #expect(abs(expiresAt.microseconds / 1_000_000 - Int64(Date().timeIntervalSince1970) - 300) <= 5)
            // An unknown app looks like a known one without its key (HardeningHTTPTests has the rest).
            let unknown = try worker.post("/v1/challenges", #"{"teamId":"NOPE123456","bundleId":"x"}"#, bearer: key)
            #expect(unknown.status == 401)
            let badTeam = try worker.post("/v1/challenges", #"{"teamId":"NOPE","bundleId":"x"}"#, bearer: key)
            #expect(badTeam.status == 400)
            let badBody = try worker.post("/v1/challenges", #"{"teamId":1}"#, bearer: key)
            #expect(badBody.status == 400)
            // The burst of three is spent by the first request and these two; the next waits a minute.
            let spare = try worker.post("/v1/challenges", body, bearer: key)
            #expect(spare.status == 201)
            #expect(try worker.post("/v1/challenges", body, bearer: key).status == 201)
            let limited = try worker.post("/v1/challenges", body, bearer: key)
            #expect(limited.status == 429)
            #expect(limited.headers.contains { $0.lowercased().hasPrefix("retry-after: ") })
            // The real bodies, 201 and each refusal, against Schemas/challenge-response.schema.json.
            try validate([created.body, spare.body, unknown.body, badTeam.body, badBody.body, limited.body], schema: "challenge-response")

            // Expiry: a challenge aged past its five minutes in the database (as if issued long before receivedAt).
            let stale = try Self.issueByCLI(bundleId)
            let connection = try PGConnection(conninfo: try Stack.databaseURL)
            try connection.execute(
                "UPDATE challenges SET issued_at = issued_at - interval '10 minutes', expires_at = expires_at - interval '10 minutes' WHERE challenge = $1",
                [.bytes(try #require(Base64.decode(stale)))])
            // A crash after consuming, before the verdict was stored: the same job, redelivered, still holds it.
            let held = try Self.issueByCLI(bundleId)
            try connection.execute(
                "UPDATE challenges SET used_by_job = $2, used_at = now() WHERE challenge = $1",
                [.bytes(try #require(Base64.decode(held))), .text(bundleId + "-held")])

            // jobIds are global: prefixed with the run's app so that reruns against one database never collide.
            let id = { (name: String) in "\(bundleId)-\(name)" }
            // One device for both, so one partition and "first" is decided first.
            let device = try Device()
            let first = try Self.attestation(bundleId: bundleId, jobId: id("first"), challenge: challenge, device: device)
            try produce(topics.jobs, [
                first, try Self.attestation(bundleId: bundleId, jobId: id("second"), challenge: challenge, device: device), first,
                try Self.attestation(bundleId: bundleId, jobId: id("stale"), challenge: stale),
                try Self.attestation(bundleId: bundleId, jobId: id("held"), challenge: held),
                try Self.attestation(bundleId: bundleId, jobId: id("forged"), challenge: Base64.encode(try SecureRandom.bytes(32))),
            ])
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { $0.count >= 6 }, "\(worker.log.suffix(2000))")
            // Redelivered once more, after its verdict was stored: the stored verdict again, not already_used.
            try produce(topics.jobs, [first])
            #expect(verdicts.read(seconds: 60) { $0.count >= 7 })
            let outcomes = Self.outcomes(verdicts)
            #expect(outcomes[id("first")]?.ok == true)
            #expect(verdicts.verdictsByJob[id("first")]?.count == 3, "each delivery of the job is answered, unchanged")
            #expect(outcomes[id("second")]?.code == "challenge_already_used")
            #expect(outcomes[id("stale")]?.code == "challenge_expired")
            #expect(outcomes[id("held")]?.ok == true)
            #expect(outcomes[id("forged")]?.code == "challenge_invalid")
            let used = try connection.execute("SELECT used_by_job FROM challenges WHERE challenge = $1", [.bytes(Base64.decode(challenge)!)])
            #expect(used.string(0, 0) == id("first"))
            #expect(try worker.get("/metrics").body.contains("attest_challenge_requests_total{status=\"429\"} 1"))
        }

        @Test func aChallengePresentedByTwoJobsIsAlreadyUsedExactlyOnceAcrossTwoWorkers() throws {
            let topics = try Stack.topics("chal2")
            let bundleId = try Self.registerWorkerApp()
            let group = "g-\(UUID().uuidString)"
            let workers = try (0..<2).map { _ in try WorkerProcess(topics: topics, group: group, extra: ["ATTEST_BATCH_SIZE": "4"]) }
            // Each challenge goes to two jobs with different keys, so usually to different partitions and workers.
            let pairs = 24
            var messages = [(key: [UInt8]?, value: [UInt8])]()
            for n in 0..<pairs {
                let challenge = try Self.issueByCLI(bundleId)
                messages.append(try Self.attestation(bundleId: bundleId, jobId: "\(bundleId)-p\(n)-a", challenge: challenge))
                messages.append(try Self.attestation(bundleId: bundleId, jobId: "\(bundleId)-p\(n)-b", challenge: challenge))
            }
            // Both workers own partitions before the jobs arrive, so the pairs race.
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline && !workers.allSatisfy({ $0.log.contains("partitions assigned") }) { Thread.sleep(forTimeInterval: 0.1) }
            try produce(topics.jobs, messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= 2 * pairs }, "\(workers[0].log.suffix(1500))")
            let outcomes = Self.outcomes(verdicts)
            for n in 0..<pairs {
                let pair = [outcomes["\(bundleId)-p\(n)-a"], outcomes["\(bundleId)-p\(n)-b"]]
                #expect(pair.filter { $0?.ok == true }.count == 1, "pair \(n): \(pair)")
                #expect(pair.filter { $0?.code == "challenge_already_used" }.count == 1, "pair \(n): \(pair)")
            }
        }
    }
}
