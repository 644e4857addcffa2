import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import KafkaClient
import Store
import Testing
import Worker

/// One app identity through the batch processor, on the FakeStore: policies, counts and verdicts key on
/// the exact (teamId, bundleId) pair; jobIds are scoped by it; the app's environments bind assertions too.
@Suite struct AppIdentityBatchTests {
    var batch = BatchProcessorTests()
    typealias B = BatchProcessorTests
    static let app = AppIdentity(teamId: B.teamId, bundleId: B.bundleId)
    static let other = AppIdentity(teamId: B.teamId, bundleId: "com.example.other")

    init() {
        batch.store.appPolicies[Self.app] = AppPolicy(teamId: B.teamId, bundleId: B.bundleId, madLimit: 1, graceDays: 0)
        batch.store.appPolicies[Self.other] = AppPolicy(teamId: B.teamId, bundleId: Self.other.bundleId)
    }

    /// `job` with its teamId and bundleId replaced (the attestation inside still names the registered App ID).
    static func respelled(_ job: [UInt8], team: String, bundle: String) -> [UInt8] {
        guard case .object(let members) = JSONValue.parse(job)! else { return job }
        let fields = members.map { name, value -> (String, JSONValue) in
            name == "teamId" ? (name, .string(team)) : name == "bundleId" ? (name, .string(bundle)) : (name, value)
        }
        return Array(JSONValue.object(fields).serialized().utf8)
    }

    @Test(arguments: [false, true])
    mutating func splitAndMalformedSpellingsOfARegisteredAppIdAreNeverAcceptedNorCounted(admitUnknownApps: Bool) throws {
        let spellings: [(team: String, bundle: String, reason: String)] = [
            ("TEAMBATCH1.com", "example.batch", "invalid_field"), ("TEAMBATCH1.com.example", "batch", "invalid_field"),
            ("teambatch1", "com.example.batch", "invalid_field"), ("TEAMBATCH1 ", "com.example.batch", "invalid_field"),
            ("TEAMBATCH1", "com.example.batch.", "invalid_field"), ("TEAMBATCH1", ".com.example.batch", "invalid_field"),
            ("TEAMBATCH1", "com..example.batch", "invalid_field"), ("TEAMBATCH1", "com.exаmple.batch", "invalid_field"),
            ("TEAMBATCH1", "com.example.batch\u{0}", "invalid_field"), ("TEAMBATCH", "1.com.example.batch", "invalid_field"),
            ("TEAMBATCH1", "com.example.batch ", "invalid_field"), ("ТEAMBATCH1", "com.example.batch", "invalid_field"),
            // Valid pairs that are not the registration: unknown (or, when admitted, they fail Apple's rpIdHash).
            ("TEAMBATCH2", "com.example.batch", admitUnknownApps ? "rp_id_mismatch" : "unknown_app"),
            ("TEAMBATCH1", "com.Example.batch", admitUnknownApps ? "rp_id_mismatch" : "unknown_app"),
        ]
        for (n, spelling) in spellings.enumerated() {
            let job = Self.respelled(B.attestationJob(try Device(), jobId: "split-\(n)"), team: spelling.team, bundle: spelling.bundle)
            let verdict = batch.verdicts(try batch.processor(admitUnknownApps: admitUnknownApps).process([batch.message(job)]))[0]
            #expect(verdict["ok"] == .bool(false), "\(spelling)")
            #expect(verdict["reason"] == .string(spelling.reason), "\(spelling)")
        }
        #expect(batch.store.counted.isEmpty)
        // The registered pair is accepted and counted once, under its own app and quota.
        let accepted = batch.verdicts(try batch.processor().process([batch.message(B.attestationJob(try Device(), jobId: "exact"))]))
        #expect(accepted[0]["ok"] == .bool(true))
        #expect(batch.store.counted.keys.map(\.month.teamId) == [B.teamId])
        let over = batch.verdicts(try batch.processor().process([batch.message(B.attestationJob(try Device(), jobId: "over"))]))
        #expect(over[0]["reason"] == .string("quota_exceeded"))
        #expect(batch.store.counted.count == 1)
    }

    @Test mutating func anotherAppsJobWithTheSameJobIdIsDecidedAsItsOwn() throws {
        batch.store.appPolicies[Self.app]!.madLimit = nil
        let deviceA = try Device()
        let a = batch.verdicts(try batch.processor().process([batch.message(B.attestationJob(deviceA, jobId: "order-42"))]))[0]
        #expect(a["ok"] == .bool(true))
        let deviceB = try Device()
        let jobB = B.attestationJob(deviceB, jobId: "order-42", bundleId: Self.other.bundleId)
        let b = batch.verdicts(try batch.processor().process([batch.message(jobB)]))[0]
        #expect(b["ok"] == .bool(true))
        #expect(b["bundleId"] == .string(Self.other.bundleId))
        #expect(b["keyId"] == .string(Base64.encode(deviceB.keyId)))
        #expect(b["publicKey"] == .string(Base64.encode(deviceB.publicKeyX962)))
        #expect(batch.store.verdicts.count == 2)
        // Both apps in one batch, and the invalid job of a third pair: three jobs, three decisions.
        let deviceC = try Device(), deviceD = try Device()
        let out = batch.verdicts(
            try batch.processor().process([
                batch.message(B.attestationJob(deviceC, jobId: "order-43")),
                batch.message(B.attestationJob(deviceD, jobId: "order-43", bundleId: Self.other.bundleId)),
                batch.message(Array(#"{"jobId":"order-43","teamId":"TEAMBATCH3","bundleId":"x"}"#.utf8)),
            ]))
        #expect(out.map { $0["keyId"] } == [.string(Base64.encode(deviceC.keyId)), .string(Base64.encode(deviceD.keyId)), .null])
        #expect(out.map { $0["ok"] } == [.bool(true), .bool(true), .bool(false)])
        #expect(out[2]["reason"] == .string("missing_field"))
        #expect(batch.store.verdicts.keys.filter { $0.jobId == "order-43" }.map(\.app.bundleId).sorted() == [
            B.bundleId, Self.other.bundleId, "x",
        ])
    }

    @Test mutating func aJobIdAnotherWorkerStoredMeanwhileIsAnsweredOnlyWhenItIsTheSameJob() throws {
        let job = B.attestationJob(try Device(), jobId: "race-1")
        let key = ScopedJobId(app: Self.app, jobId: "race-1")
        // The other worker decided this very message: its verdict is the answer.
        batch.store.raceVerdicts[key] = StoredVerdict(json: #"{"jobId":"race-1","from":"other"}"#, jobDigest: Digest.sha256.hash(job))
        let same = try batch.processor().process([batch.message(job)])
        #expect(same[0].value == Array(#"{"jobId":"race-1","from":"other"}"#.utf8))
        // It decided other content under the jobId: this job gets its own rejection, the stored one stays.
        let job2 = B.attestationJob(try Device(), jobId: "race-2")
        let key2 = ScopedJobId(app: Self.app, jobId: "race-2")
        batch.store.raceVerdicts[key2] = StoredVerdict(json: #"{"jobId":"race-2","from":"other"}"#, jobDigest: [UInt8](repeating: 1, count: 32))
        let other = batch.verdicts(try batch.processor().process([batch.message(job2)]))[0]
        #expect(other["reason"] == .string("job_id_reused"))
        #expect(other["jobId"] == .string("race-2"))
        #expect(batch.store.verdicts[key2]?.json == #"{"jobId":"race-2","from":"other"}"#)
        // Two contents of one jobId in this batch, and the other worker stored the second: the first is the
        // reuse, the second gets the stored verdict (not a rejection for coming second in this batch).
        let third = B.attestationJob(try Device(), jobId: "race-3")
        let stored = B.attestationJob(try Device(), jobId: "race-3")
        batch.store.raceVerdicts[ScopedJobId(app: Self.app, jobId: "race-3")] =
            StoredVerdict(json: #"{"jobId":"race-3","from":"other"}"#, jobDigest: Digest.sha256.hash(stored))
        let both = try batch.processor().process([batch.message(third), batch.message(stored), batch.message(third)])
        #expect(batch.verdicts([both[0]])[0]["reason"] == .string("job_id_reused"))
        #expect(both[1].value == Array(#"{"jobId":"race-3","from":"other"}"#.utf8))
        #expect(batch.verdicts([both[2]])[0]["reason"] == .string("job_id_reused"))
        #expect(batch.store.counted.isEmpty)
    }

    @Test mutating func aVerdictStoredWithoutADigestCountsAsTheSameJob() throws {
        let job = B.attestationJob(try Device(), jobId: "legacy-1")
        batch.store.verdicts[ScopedJobId(app: Self.app, jobId: "legacy-1")] = StoredVerdict(json: #"{"legacy":true}"#, jobDigest: nil)
        let out = try batch.processor().process([batch.message(job)])
        #expect(out[0].value == Array(#"{"legacy":true}"#.utf8))
        // Under another app the same jobId is a job of its own.
        let elsewhere = B.attestationJob(try Device(), jobId: "legacy-1", bundleId: Self.other.bundleId)
        #expect(batch.verdicts(try batch.processor().process([batch.message(elsewhere)]))[0]["ok"] == .bool(true))
    }

    @Test(arguments: [
        ("development", EnvironmentPolicy.production, String?("environment_not_allowed")), ("development", .any, nil),
        ("development", .development, nil), ("production", .development, "environment_not_allowed"),
        ("production", .production, nil), ("unknown", .any, "environment_not_allowed"),
    ])
    mutating func anAssertionIsBoundByTheAppsCurrentEnvironments(attestedIn: String, policy: EnvironmentPolicy, reason: String?)
        throws
    {
        batch.store.appPolicies[Self.app]!.environments = policy
        let device = try Device()
        batch.store.devices[device.keyId] = DeviceRecord(
            keyId: device.keyId, teamId: B.teamId, bundleId: B.bundleId, publicKey: device.publicKeyX962, counter: 0,
            environment: attestedIn, deviceId: "d", fingerprint: nil)
        let verdict = batch.verdicts(
            try batch.processor().process([batch.message(B.assertionJob(device, jobId: "env-1", counter: 1))]))[0]
        #expect(verdict["reason"] == reason.map(JSONValue.string), "\(attestedIn) under \(policy)")
        if reason != nil {
            #expect(verdict["code"] == .string("apple_validation_failed"))
            #expect(batch.store.devices[device.keyId]?.counter == 0)
            #expect(verdict["counter"] == nil)
        } else {
            #expect(batch.store.devices[device.keyId]?.counter == 1)
        }
    }

    @Test mutating func aForgedAssertionOfADevelopmentKeyIsASignatureFailureNotAnEnvironmentOne() throws {
        let device = try Device()
        batch.store.devices[device.keyId] = DeviceRecord(
            keyId: device.keyId, teamId: B.teamId, bundleId: B.bundleId, publicKey: try Device().publicKeyX962, counter: 0,
            environment: "development", deviceId: "d", fingerprint: nil)
        let verdict = batch.verdicts(
            try batch.processor().process([batch.message(B.assertionJob(device, jobId: "env-2", counter: 1))]))[0]
        #expect(verdict["reason"] == .string("signature_invalid"))
    }

    /// Challenge claims are settled by jobId: two worker-challenge apps' equal jobIds in one batch each get
    /// their own outcome (a round trip each), not the other's.
    @Test func twoAppsEqualJobIdsInOneBatchEachSettleTheirOwnChallenge() throws {
        var challenges = ChallengeTests()
        let otherBundle = "com.example.challenges-b"
        challenges.store.appPolicies[AppIdentity(teamId: B.teamId, bundleId: otherBundle)] = AppPolicy(
            teamId: B.teamId, bundleId: otherBundle, challenges: .worker)
        let issued = challenges.issue()
        let foreign = challenges.issue()  // issued for the first app, presented for the second
        let out = try challenges.processor().process([
            challenges.message(ChallengeTests.attestation(try Device(), jobId: "c-42", challenge: issued)),
            challenges.message(ChallengeTests.attestation(try Device(), jobId: "c-42", challenge: foreign, bundleId: otherBundle)),
        ])
        #expect(challenges.outcome(out[0]).ok)
        #expect(challenges.outcome(out[1]).reason == "challenge_unknown")
        #expect(challenges.store.consumeCalls == 2)
        #expect(challenges.store.challenges[Base64.decode(foreign)!]?.usedBy == nil)
    }
}
