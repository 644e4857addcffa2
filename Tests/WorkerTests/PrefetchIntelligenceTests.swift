import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import DeviceIntelligence
import PostgresClient
import Testing
@testable import Store
@testable import Worker

/// The batch's intelligence read rides on its prefetch, for the identities the device cache gives before
/// the prefetch: what the fresh rows change is read after it, never taken from the guess.
@Suite struct PrefetchIntelligenceTests {
    var batch = BatchProcessorTests()

    @Test mutating func aKeyNotCachedIsScoredUnderTheIdentityItsFreshRowGives() throws {
        let device = try Device()
        let job = BatchProcessorTests.attestationJob(device, jobId: "p-a", metadata: [("deviceFingerprint", .string("fp-p"))])
        let attested = batch.verdicts(try batch.processor().process([batch.message(job)]))[0]
        #expect(attested["ok"] == .bool(true))
        // PostgreSQL keeps the fingerprint with the key (the fake does not on its own).
        batch.store.devices[device.keyId]?.fingerprint = "fp-p"
        // A fresh processor's cache is empty: its guess is the keyId's identity, the fresh row's is the
        // fingerprint's, whose history (one attestation) the verdict must show.
        let assertion = BatchProcessorTests.assertionJob(device, jobId: "p-1", counter: 1)
        let verdict = batch.verdicts(try batch.processor().process([batch.message(assertion)]))[0]
        #expect(verdict["ok"] == .bool(true))
        #expect(verdict["deviceIntelligence"]?["deviceId"] == attested["deviceIntelligence"]?["deviceId"])
        #expect(verdict["deviceIntelligence"]?["attestationCount"] == .int(1))
    }

    /// The gather's one round trip reads what the separate reads do, and settles a claim as
    /// `consumeChallenges` would.
    @Test func theGatherEqualsTheSeparateReadsAndClaims() throws {
        let db = try AttestStoreTests.Database()
        let at = RiskWindowStoreTests.start
        _ = try db.store.commit([RiskWindowStoreTests.rejection("p-r", .counterNotIncreasing, at: at)])
        var query = IntelligenceQuery()
        query.devices = [RiskWindowStoreTests.device]
        let month = AppMonth(teamId: "TEAM", bundleId: "app", month: at.utcMonth)
        query.months = [month]
        query.counted = [MonthlyDevice(month: month, identity: RiskWindowStoreTests.device.identity)]
        try db.addDevice(AttestStoreTests.keyA, counter: 3)
        let job = ScopedJobId(app: AppIdentity(teamId: "TEAM", bundleId: "app"), jobId: "p-r")
        let separate = try db.store.readIntelligence(query)
        try db.connection.execute("INSERT INTO apps (team_id, bundle_id, challenges) VALUES ('TEAM', 'app', 'worker')")
        let issued = try #require(try ChallengeStore.insert(try SecureRandom.bytes(32), teamId: "TEAM", bundleId: "app", on: db.connection))
        let claim = ChallengeClaim(jobId: "p-c", teamId: "TEAM", bundleId: "app", challenge: issued.bytes, receivedAt: issued.issuedAt, skewSeconds: 60)
        let gathered = try db.store.batch { tx throws(PGError) in
            let gathered = try tx.gather(GatherRequest(jobs: [job], keyIds: [AttestStoreTests.keyA], intelligence: query, claims: [claim]))
            _ = try tx.settle([])
            return gathered
        }
        let (verdicts, devices, together) = (gathered.verdicts, gathered.devices, gathered.intelligence)
        #expect(gathered.challenges["p-c"] == .consumed)
        #expect(try db.store.consumeChallenges([ChallengeClaim(
            jobId: "p-d", teamId: "TEAM", bundleId: "app", challenge: issued.bytes, receivedAt: issued.issuedAt, skewSeconds: 60)])["p-d"] == .alreadyUsed)
        #expect(verdicts[job] != nil)
        #expect(devices[AttestStoreTests.keyA]?.counter == 3)
        let history = try #require(together.histories[RiskWindowStoreTests.device])
        #expect(history.counterReplays == 1)
        #expect(history.counterReplays == separate.histories[RiskWindowStoreTests.device]?.counterReplays)
        #expect(together.scores[RiskWindowStoreTests.device]?.score == separate.scores[RiskWindowStoreTests.device]?.score)
        #expect(together.counted == separate.counted)
        #expect(together.quotas.keys.sorted { $0.month < $1.month } == separate.quotas.keys.sorted { $0.month < $1.month })
    }
}
