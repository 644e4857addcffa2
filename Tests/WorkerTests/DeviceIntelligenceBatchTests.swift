import AttestCore
import AttestJobs
import AttestMint
import DeviceIntelligence
import KafkaClient
import Store
import Testing
import Worker

/// Monthly active devices, quotas and deviceIntelligence through the batch processor, on the FakeStore
/// (the same semantics as the SQL; Tests/IntegrationTests checks them on PostgreSQL).
@Suite struct DeviceIntelligenceBatchTests {
    var batch = BatchProcessorTests()
    static let month = AppMonth(teamId: BatchProcessorTests.teamId, bundleId: BatchProcessorTests.bundleId, month: "2026-04")

    init() {
        batch.store.appPolicies[AppIdentity(teamId: BatchProcessorTests.teamId, bundleId: BatchProcessorTests.bundleId)] = AppPolicy(
            teamId: BatchProcessorTests.teamId, bundleId: BatchProcessorTests.bundleId, madLimit: 3, graceDays: 7)
    }

    mutating func attest(_ device: Device, _ jobId: String, fingerprint: String? = nil) throws -> JSONValue {
        let metadata: [(String, JSONValue)] = fingerprint.map { [("deviceFingerprint", .string($0))] } ?? []
        let job = BatchProcessorTests.attestationJob(device, jobId: jobId, metadata: metadata)
        return batch.verdicts(try batch.processor().process([batch.message(job)]))[0]
    }

    @Test mutating func everyAcceptedVerdictCountsItsDeviceOnceAndRedeliveryNever() throws {
        let device = try Device()
        let attestation = batch.message(BatchProcessorTests.attestationJob(device, jobId: "m-a"))
        let assertion = batch.message(BatchProcessorTests.assertionJob(device, jobId: "m-s", counter: 1))
        _ = try batch.processor().process([attestation, assertion])
        _ = try batch.processor().process([attestation, assertion, attestation])
        #expect(batch.store.counted.count == 1)
        #expect(batch.store.counted.values.first == "m-a")
        #expect(batch.store.histories.values.first?.attestations == 1)
    }

    /// The batch's intelligence read is built from the devices the cache held; when the gather's fresh row
    /// gives a key another fingerprint (another worker re-attested it), even one Unicode calls equivalent,
    /// the jobs are decided with that identity's history, read in a second trip.
    @Test mutating func aKeysFingerprintChangedSinceTheCacheReadIsDecidedWithItsFreshIdentity() throws {
        let device = try Device()
        let processor = batch.processor()
        let attestation = BatchProcessorTests.attestationJob(device, jobId: "i-a", metadata: [("deviceFingerprint", .string("caf\u{e9}"))])
        _ = try processor.process([batch.message(attestation)])
        let decomposed = "cafe\u{301}"
        batch.store.devices[device.keyId]?.fingerprint = decomposed
        let fresh = AppDevice(
            teamId: BatchProcessorTests.teamId, bundleId: BatchProcessorTests.bundleId, identity: DeviceIdentity(fingerprint: decomposed))
        var history = DeviceHistory()
        history.deviceId = "other-worker"
        batch.store.histories[fresh] = history
        let assertion = BatchProcessorTests.assertionJob(device, jobId: "i-s", counter: 1)
        let verdict = batch.verdicts(try processor.process([batch.message(assertion)]))[0]
        #expect(verdict["ok"] == .bool(true))
        #expect(verdict["deviceIntelligence"]?["deviceId"] == .string("other-worker"))
    }

    @Test mutating func aRegeneratedKeyWithTheSameFingerprintCountsOnce() throws {
        #expect(try attest(Device(), "f-1", fingerprint: "fp-1")["ok"] == .bool(true))
        let second = try attest(Device(), "f-2", fingerprint: "fp-1")
        #expect(second["ok"] == .bool(true))
        #expect(batch.store.counted.count == 1)
        // The same device: one deviceId, two attestations, one key regenerated.
        #expect(second["deviceIntelligence"]?["attestationCount"] == .int(2))
        let factors = second["deviceIntelligence"]?["factors"]
        #expect(factors == .array([.object([("name", .string("key_churn")), ("points", .int(10)), ("value", .int(2))])]))
    }

    @Test mutating func quotaStopsNewDevicesOnlyAfterTheLimitAndTheGracePeriod() throws {
        let known = try Device()
        #expect(try attest(known, "q-1")["ok"] == .bool(true))
        #expect(try attest(Device(), "q-2")["ok"] == .bool(true))  // one below the limit
        #expect(batch.store.quotaEvents[Self.month]?[80] == nil)
        #expect(try attest(Device(), "q-3")["ok"] == .bool(true))  // at the limit: the grace period starts
        #expect(batch.store.quotaEvents[Self.month]?.keys.sorted() == [80, 100])
        #expect(try attest(Device(), "q-4")["ok"] == .bool(true))  // over the limit, inside the grace period
        // Eight days later the grace period (7 days) has passed.
        batch.store.quotaEvents[Self.month]?[100] = Timestamp(seconds: 1_777_000_000 - 8 * 86_400)
        let refused = try attest(Device(), "q-5")
        #expect(refused["code"] == .string("quota_exceeded"))
        #expect(refused["limit"] == .int(3) && refused["current"] == .int(4))
        #expect(batch.store.counted.count == 4)
        // A device counted this month keeps working, attestations and assertions alike.
        #expect(try attest(known, "q-6")["ok"] == .bool(true))
        let assertion = BatchProcessorTests.assertionJob(known, jobId: "q-7", counter: 1)
        #expect(batch.verdicts(try batch.processor().process([batch.message(assertion)]))[0]["ok"] == .bool(true))
    }

    @Test mutating func riskRowsAreWrittenOnlyByDecisionsThatChangeThem() throws {
        let device = try Device()
        _ = try attest(device, "w-1")
        let clean = (1...3).map { batch.message(BatchProcessorTests.assertionJob(device, jobId: "w-a\($0)", counter: UInt32($0))) }
        _ = try batch.processor().process(clean)
        _ = try batch.processor().process([batch.message(BatchProcessorTests.assertionJob(device, jobId: "w-a4", counter: 4))])
        let replay = batch.message(BatchProcessorTests.assertionJob(device, jobId: "w-r", counter: 2))
        let replayed = batch.verdicts(try batch.processor().process([replay]))[0]
        #expect(replayed["reason"] == .string("counter_not_increasing"))
        // The attestation creates the row, the replay records an event; the accepted assertions change nothing.
        #expect(batch.store.riskWrites == ["w-1", "w-r"])
        #expect(batch.store.scores.values.first?.score == replayed["deviceIntelligence"]?["riskScore"].flatMap {
            if case .int(let n) = $0 { Int(n) } else { nil }
        })
    }

    @Test mutating func verdictsCarryDeviceIntelligenceWithAStableDeviceId() throws {
        let device = try Device()
        let first = try attest(device, "i-1")
        let intelligence = try #require(first["deviceIntelligence"])
        #expect(intelligence["riskCategory"] == .string("trusted"))
        #expect(intelligence["deviceIntegrity"] == .string("high"))
        #expect(intelligence["attestationCount"] == .int(1))
        #expect(intelligence["lastAttestationDate"] == .string("2026-04-24T03:06:40Z"))
        let assertion = BatchProcessorTests.assertionJob(device, jobId: "i-2", counter: 1)
        let second = batch.verdicts(try batch.processor().process([batch.message(assertion)]))[0]
        #expect(second["deviceIntelligence"]?["deviceId"] == intelligence["deviceId"])
        let replay = BatchProcessorTests.assertionJob(device, jobId: "i-3", counter: 1)
        let replayed = batch.verdicts(try batch.processor().process([batch.message(replay)]))[0]
        #expect(replayed["reason"] == .string("counter_not_increasing"))
        #expect(replayed["deviceIntelligence"]?["riskScore"] == .int(15))
    }
}
