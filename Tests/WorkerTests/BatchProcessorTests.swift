import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import DeviceIntelligence
import Foundation
import KafkaClient
import Observability
import PostgresClient
import Store
import Synchronization
import Testing
import Worker

/// An in-memory DecisionStore with the SQL statements' semantics (insert-if-absent verdicts, counter
/// compare-and-set, monthly counts insert-if-absent, history increments, quota thresholds recorded once),
/// so the batch logic is tested without infrastructure.
final class FakeStore: DecisionStore, BatchTransaction, @unchecked Sendable {
    let lock = NSLock()
    var appPolicies: [AppIdentity: AppPolicy] = [:]
    var verdicts: [ScopedJobId: StoredVerdict] = [:]
    var devices: [[UInt8]: DeviceRecord] = [:]
    var commits = 0
    /// Accepted Android assertions per key (`assertion_count`).
    var uses: [[UInt8]: Int] = [:]
    /// Counters a writer that takes no lock sets right after the next prefetch (a lost race).
    var raceCounters: [[UInt8]: UInt32] = [:]
    /// Verdicts another worker stores right after the next prefetch (a jobId decided concurrently).
    var raceVerdicts: [ScopedJobId: StoredVerdict] = [:]
    /// Issued challenges by their bytes, with the job that consumed each.
    var challenges: [[UInt8]: (app: String, expiresAt: Timestamp, usedBy: String?)] = [:]
    var consumeCalls = 0
    var histories: [AppDevice: DeviceHistory] = [:]
    /// `device_risk`'s score and factors, and the jobs whose decisions wrote the row.
    var scores: [AppDevice: HeldScore] = [:]
    var riskWrites: [String] = []
    /// Devices counted per month, with the job that counted them.
    var counted: [MonthlyDevice: String] = [:]
    /// Threshold (80, 100) → when it was reached, per app and month.
    var quotaEvents: [AppMonth: [Int: Timestamp]] = [:]
    /// The jobIds of the settled decisions that count their device (`countsAsActive`), in settle order.
    var counting: [String] = []

    func apps() throws(PGError) -> [AppIdentity: AppPolicy] { lock.withLock { appPolicies } }

    /// As the PostgreSQL store does, the body again whole after a transient failure: here, after a race the
    /// fields above stage (a writer that takes no lock), which the batch meets at its settle.
    func batch<T>(_ body: (any BatchTransaction) throws(PGError) -> T) throws(PGError) -> T {
        var attempts = 0
        while true {
            do throws(PGError) {
                return try body(self)
            } catch where error.fault == .transient && attempts < 3 {
                attempts += 1
            }
        }
    }

    func gather(_ request: GatherRequest) throws(PGError) -> Gathered {
        let (verdicts, devices) = try prefetch(jobs: request.jobs, keyIds: request.keyIds)
        return Gathered(
            verdicts: verdicts, devices: devices, intelligence: try intelligence(request.intelligence),
            challenges: request.claims.isEmpty ? [:] : try consumeChallenges(request.claims))
    }

    func settle(_ decisions: [Decision]) throws(PGError) -> (stored: [Bool], crossings: [QuotaCrossing]) {
        lock.withLock { counting += decisions.filter { $0.intelligence?.countsAsActive == true }.map(\.jobId) }
        let (outcomes, crossings) = try commit(decisions)
        return (outcomes.map { $0 == .stored }, crossings)
    }

    func prefetch(jobs: [ScopedJobId], keyIds: [[UInt8]]) throws(PGError) -> (verdicts: [ScopedJobId: StoredVerdict], devices: [[UInt8]: DeviceRecord]) {
        lock.withLock {
            let v = verdicts.filter { jobs.contains($0.key) }
            let d = devices.filter { keyIds.contains($0.key) }
            for (key, counter) in raceCounters { devices[key]?.counter = counter }
            raceCounters = [:]
            verdicts.merge(raceVerdicts) { old, _ in old }
            raceVerdicts = [:]
            return (v, d)
        }
    }

    func intelligence(_ query: IntelligenceQuery) throws(PGError) -> IntelligenceSnapshot {
        lock.withLock {
            var snapshot = IntelligenceSnapshot()
            snapshot.histories = histories.filter { query.devices.contains($0.key) }
            snapshot.scores = scores.filter { query.devices.contains($0.key) }
            snapshot.counted = Set(counted.keys).intersection(query.counted)
            for month in query.months {
                snapshot.quotas[month] = MonthlyQuota(devices: devices(in: month), limitReachedAt: quotaEvents[month]?[100])
            }
            return snapshot
        }
    }

    private func devices(in month: AppMonth) -> Int { counted.keys.filter { $0.month == month }.count }

    func commit(_ decisions: [Decision]) throws(PGError) -> (outcomes: [CommitOutcome], crossings: [QuotaCrossing]) {
        lock.withLock {
            commits += 1
            var crossings = [QuotaCrossing]()
            let outcomes = decisions.map { d -> CommitOutcome in
                let key = ScopedJobId(app: d.app, jobId: d.jobId)
                if let existing = verdicts[key] { return .alreadyDecided(existing) }
                switch d.change {
                case .none:
                    break
                case .attested(let device):
                    let previous = devices[device.keyId]
                    devices[device.keyId] = DeviceRecord(
                        keyId: device.keyId, teamId: device.teamId, bundleId: device.bundleId, publicKey: device.publicKey,
                        counter: previous?.counter ?? 0, environment: device.environment,
                        deviceId: device.deviceId ?? previous?.deviceId ?? UUID().uuidString, fingerprint: nil)
                case .advanced(let keyId, let counter):
                    guard let device = devices[keyId], device.counter < counter else { return .counterConflict }
                    devices[keyId]!.counter = counter
                case .used(let keyId):
                    uses[keyId, default: 0] += 1
                }
                verdicts[key] = StoredVerdict(json: d.verdictJSON, jobDigest: d.jobDigest)
                if let c = d.intelligence { crossings += apply(c, jobId: d.jobId, at: d.receivedAt!) }
                return .stored
            }
            return (outcomes, crossings)
        }
    }

    private func apply(_ c: IntelligenceChange, jobId: String, at receivedAt: Timestamp) -> [QuotaCrossing] {
        if c.writesRisk {
            var history = histories[c.device] ?? DeviceHistory()
            history.deviceId = history.deviceId ?? c.deviceId
            history.record(c.event, at: receivedAt)
            histories[c.device] = history
            scores[c.device] = HeldScore(c.assessment)
            riskWrites.append(jobId)
        }
        let month = AppMonth(teamId: c.device.teamId, bundleId: c.device.bundleId, month: c.month)
        let monthly = MonthlyDevice(month: month, identity: c.device.identity)
        guard c.countsAsActive, counted[monthly] == nil else { return [] }
        counted[monthly] = jobId
        guard let limit = appPolicies[AppIdentity(teamId: month.teamId, bundleId: month.bundleId)]?.madLimit else { return [] }
        let count = devices(in: month)
        return [80, 100].compactMap { threshold -> QuotaCrossing? in
            guard count * 100 >= limit * threshold, quotaEvents[month]?[threshold] == nil else { return nil }
            quotaEvents[month, default: [:]][threshold] = receivedAt
            return QuotaCrossing(
                teamId: month.teamId, bundleId: month.bundleId, month: month.month, threshold: threshold, devices: count,
                limit: limit)
        }
    }

    /// The conditional UPDATE's semantics: unknown or another app's, expired at receivedAt, issued after
    /// receivedAt + skew, taken by another job, else consumed (again, for the job that holds it).
    func consumeChallenges(_ claims: [ChallengeClaim]) throws(PGError) -> [String: ChallengeOutcome] {
        lock.withLock {
            consumeCalls += 1
            var outcomes = [String: ChallengeOutcome]()
            for claim in claims {
                guard let issued = challenges[claim.challenge], issued.app == claim.teamId + "." + claim.bundleId else {
                    outcomes[claim.jobId] = .unknown
                    continue
                }
                if claim.receivedAt > issued.expiresAt {
                    outcomes[claim.jobId] = .expired
                } else if claim.receivedAt.adding(seconds: claim.skewSeconds)
                    < issued.expiresAt.adding(seconds: -ChallengeStore.lifetimeSeconds)
                {
                    outcomes[claim.jobId] = .notYetIssued
                } else if issued.usedBy == nil || issued.usedBy == claim.jobId {
                    challenges[claim.challenge]!.usedBy = claim.jobId
                    outcomes[claim.jobId] = .consumed
                } else {
                    outcomes[claim.jobId] = .alreadyUsed
                }
            }
            return outcomes
        }
    }
}

@Suite struct BatchProcessorTests {
    static let teamId = "TEAMBATCH1"
    static let bundleId = "com.example.batch"
    static let pki = try! TestPKI.generate(
        validFrom: Date(timeIntervalSince1970: 1_577_836_800), validUntil: Date(timeIntervalSince1970: 2_366_841_600))
    static let now = Date(timeIntervalSince1970: 1_777_000_000)
    static let trust = TrustConfiguration(
        attestationAnchor: try! TrustAnchor(pem: pki.attestationRootPEM), receiptAnchor: try! TrustAnchor(pem: pki.receiptRootPEM))

    let store = FakeStore()
    var offset: Int64 = 0

    init() {
        store.appPolicies[AppIdentity(teamId: Self.teamId, bundleId: Self.bundleId)] = AppPolicy(teamId: Self.teamId, bundleId: Self.bundleId)
    }

    func processor(
        admitUnknownApps: Bool = false, metrics: WorkerMetrics? = nil, clock: any Clock = FixedClock(Timestamp(seconds: 1_777_000_000))
    ) -> BatchProcessor {
        BatchProcessor(
            verifier: JobVerifier(trust: Self.trust, clock: clock), store: store,
            devices: DeviceCache(),
            settings: BatchProcessor.Settings(
                verdictsTopic: "verdicts", deadLetterTopic: "dead", maxMessageBytes: 64 * 1024,
                admitUnknownApps: admitUnknownApps),
            metrics: metrics)
    }

    mutating func message(_ value: [UInt8], key: [UInt8]? = nil) -> KafkaMessage {
        offset += 1
        return KafkaMessage(topic: "jobs", partition: 0, offset: offset, key: key, value: value, headers: [], timestampMs: nil)
    }

    static func attestationJob(
        _ device: Device, jobId: String, bundleId: String = bundleId, metadata: [(String, JSONValue)] = []
    ) -> [UInt8] {
        let cdh = Digest.sha256.hash(Array(jobId.utf8))
        let minted = try! pki.mintAttestation(device: device, teamId: teamId, bundleId: bundleId, clientDataHash: cdh, at: now)
        return Array(JSONValue.object([
            ("jobId", .string(jobId)), ("teamId", .string(teamId)), ("bundleId", .string(bundleId)),
            ("keyId", .string(Base64.encode(device.keyId))), ("attestationObject", .string(Base64.encode(minted.attestationObject))),
            ("clientDataHash", .string(Base64.encode(cdh))), ("receivedAt", .string("2026-04-24T03:06:40Z")),
        ] + metadata).serialized().utf8)
    }

    @Test mutating func aJobIdReusedWithOtherContentGetsARejectionOfItsOwnAndIsReported() throws {
        let metrics = WorkerMetrics()
        let processor = self.processor(metrics: metrics)
        let original = Self.attestationJob(try Device(), jobId: "reuse-1")
        let first = try processor.process([message(original)])
        // Another device's job under the same jobId, then the original redelivered: the reuse is rejected as
        // its own job (its keyId, not the first's), the original gets its stored verdict byte for byte.
        let otherDevice = try Device()
        let later = try processor.process([message(Self.attestationJob(otherDevice, jobId: "reuse-1")), message(original)])
        let reused = verdicts(later)[0]
        #expect(reused["ok"] == .bool(false))
        #expect(reused["code"] == .string("job_invalid"))
        #expect(reused["reason"] == .string("job_id_reused"))
        #expect(reused["keyId"] == .string(Base64.encode(otherDevice.keyId)))
        #expect(reused["publicKey"] == nil)
        #expect(later[0].key == Array(Base64.encode(otherDevice.keyId).utf8))
        #expect(later[1].value == first[0].value)
        #expect(metrics.registry.render().contains("attest_job_id_reused_total 1\n"))
        // The first decision stands.
        let key = ScopedJobId(app: AppIdentity(teamId: Self.teamId, bundleId: Self.bundleId), jobId: "reuse-1")
        #expect(store.verdicts[key]?.json.utf8.elementsEqual(first[0].value) == true)
        // Within one batch too: the second of two different jobs with one jobId is rejected on its own, an
        // exact copy of the first gets the first's verdict.
        let job = Self.attestationJob(try Device(), jobId: "reuse-2")
        let batch = try processor.process([
            message(job), message(Self.attestationJob(try Device(), jobId: "reuse-2")), message(job),
        ])
        #expect(verdicts(batch).map { $0["reason"] } == [nil, .string("job_id_reused"), nil])
        #expect(batch[2].value == batch[0].value)
        #expect(metrics.registry.render().contains("attest_job_id_reused_total 2\n"))
    }

    /// Two jobIds Unicode calls equivalent but whose bytes differ are two jobs, as they are two rows: both
    /// decided in one batch, each redelivery answered with its own stored verdict.
    @Test mutating func canonicallyEquivalentJobIdsAreTwoJobs() throws {
        let metrics = WorkerMetrics()
        let processor = self.processor(metrics: metrics)
        let (composed, decomposed) = (Self.attestationJob(try Device(), jobId: "caf\u{E9}-1"), Self.attestationJob(try Device(), jobId: "cafe\u{301}-1"))
        let first = try processor.process([message(composed), message(decomposed)])
        #expect(verdicts(first).map { $0["ok"] } == [.bool(true), .bool(true)], "\(verdicts(first))")
        let again = try processor.process([message(decomposed), message(composed)])
        #expect(again[0].value == first[1].value && again[1].value == first[0].value)
        #expect(!metrics.registry.render().contains("attest_job_id_reused_total 1"))
        #expect(store.verdicts.count == 2)
    }

    static func assertionJob(_ device: Device, jobId: String, counter: UInt32, bundleId: String = bundleId) -> [UInt8] {
        let cdh = Digest.sha256.hash(Array("request-\(counter)".utf8))
        let minted = try! device.mintAssertion(teamId: teamId, bundleId: bundleId, clientDataHash: cdh, counter: counter)
        return Array(JSONValue.object([
            ("jobId", .string(jobId)), ("teamId", .string(teamId)), ("bundleId", .string(bundleId)),
            ("keyId", .string(Base64.encode(device.keyId))), ("assertion", .string(Base64.encode(minted.assertion))),
            ("clientDataHash", .string(Base64.encode(cdh))), ("receivedAt", .string("2026-04-24T03:06:40Z")),
        ]).serialized().utf8)
    }

    func verdicts(_ outbound: [Outbound]) -> [JSONValue] {
        outbound.map { JSONValue.parse($0.value)! }
    }

    @Test mutating func attestationAndItsAssertionsInOneBatchAreDecidedInOrder() throws {
        let device = try Device()
        let batch = [
            message(Self.attestationJob(device, jobId: "a1")), message(Self.assertionJob(device, jobId: "s1", counter: 1)),
            message(Self.assertionJob(device, jobId: "s2", counter: 2)),
        ]
        let out = try processor().process(batch)
        #expect(out.map(\.sourceOffset) == batch.map(\.offset))
        #expect(verdicts(out).map { $0["ok"] } == [.bool(true), .bool(true), .bool(true)])
        #expect(store.devices[device.keyId]?.counter == 2)
        #expect(out.allSatisfy { $0.topic == "verdicts" && $0.key == Array(Base64.encode(device.keyId).utf8) })
        #expect(out[1].headers.first?.name == "jobId")
        #expect(store.commits == 1)
        // Only the device's first accepted decision goes to the month's insert-if-absent.
        #expect(store.counting == ["a1"])
        // In a later batch the device is counted already: none does.
        _ = try processor().process([message(Self.assertionJob(device, jobId: "s3", counter: 3))])
        #expect(store.counting == ["a1"])
    }

    @Test mutating func redeliveredJobsRepublishTheStoredVerdictUnchanged() throws {
        let device = try Device()
        let p = processor()
        let attestation = message(Self.attestationJob(device, jobId: "r-a"))
        let assertion = message(Self.assertionJob(device, jobId: "r-s", counter: 5))
        let first = try p.process([attestation, assertion])
        // The same messages again, later, through a fresh processor (another worker after a crash).
        let again = try processor().process([attestation, assertion])
        #expect(again.map(\.value) == first.map(\.value))
        #expect(verdicts(again)[1]["ok"] == .bool(true))
        #expect(store.devices[device.keyId]?.counter == 5)
    }

    @Test mutating func aReplayedAssertionUnderANewJobIdIsRejected() throws {
        let device = try Device()
        let p = processor()
        _ = try p.process([message(Self.attestationJob(device, jobId: "p-a")), message(Self.assertionJob(device, jobId: "p-1", counter: 3))])
        let replay = try p.process([message(Self.assertionJob(device, jobId: "p-2", counter: 3))])
        #expect(verdicts(replay)[0]["reason"] == .string("counter_not_increasing"))
    }

    @Test mutating func aLostCounterRaceIsDecidedAgainstTheStoredCounter() throws {
        let device = try Device()
        let p = processor()
        _ = try p.process([message(Self.attestationJob(device, jobId: "c-a"))])
        // Another worker stores counter 9 after this one read the device.
        store.raceCounters[device.keyId] = 9
        let fresh = processor()
        let out = try fresh.process([message(Self.assertionJob(device, jobId: "c-1", counter: 7))])
        #expect(verdicts(out)[0]["reason"] == .string("counter_not_increasing"))
        #expect(store.devices[device.keyId]?.counter == 9)
    }

    @Test mutating func messagesThatAreNotJobsBecomeDeadLetters() throws {
        let garbage: [UInt8] = [0xff, 0x00, 0x12]
        let out = try processor().process([
            message(garbage, key: [1]), message(Array(#"{"kind":"assertion"}"#.utf8)),
            message(Array(repeating: 0x20, count: 70 * 1024)), message(Array(#"{"jobId":"bad-1","kind":"assertion"}"#.utf8)),
        ])
        #expect(out.map(\.topic) == ["dead", "dead", "dead", "verdicts"])
        let letter = JSONValue.parse(out[0].value)!
        #expect(letter["reason"] == .string("job_invalid"))
        #expect(letter["valueBase64"] == .string(Base64.encode(garbage)))
        #expect(JSONValue.parse(out[2].value)!["reason"] == .string("too_large"))
        let invalid = JSONValue.parse(out[3].value)!
        #expect(invalid["code"] == .string("job_invalid"))
        #expect(store.verdicts.keys.contains { $0.jobId == "bad-1" })
    }

    @Test mutating func unknownAppsAreRejectedUnlessAdmitted() throws {
        let device = try Device()
        let job = Self.attestationJob(device, jobId: "u-1", bundleId: "com.example.unregistered")
        let out = try processor().process([message(job)])
        #expect(verdicts(out)[0]["reason"] == .string("unknown_app"))
        let admitted = try processor(admitUnknownApps: true).process([message(Self.attestationJob(device, jobId: "u-2", bundleId: "com.example.unregistered"))])
        #expect(verdicts(admitted)[0]["ok"] == .bool(true))
    }

    /// A job of an app registered since the processor last read its apps makes the batch read them again at
    /// once (at most once a second), and is decided under its registration, with its policy; in the same
    /// batch a job of an app still unregistered stays unknown.
    @Test mutating func anAppRegisteredSinceTheLastReadIsReadAgainAndItsJobDecidedUnderIt() throws {
        let clock = ManualClock(Timestamp(seconds: 1_777_000_000))
        let p = processor(clock: clock)
        let device = try Device()
        _ = try p.process([message(Self.attestationJob(device, jobId: "late-0"))])
        let late = "com.example.late"
        store.appPolicies[AppIdentity(teamId: Self.teamId, bundleId: late)] = AppPolicy(teamId: Self.teamId, bundleId: late)
        clock.advance(seconds: 2)
        let out = try p.process([
            message(Self.attestationJob(try Device(), jobId: "late-1", bundleId: late)),
            message(Self.attestationJob(try Device(), jobId: "late-2", bundleId: "com.example.still.unregistered")),
        ])
        #expect(verdicts(out)[0]["ok"] == .bool(true), "\(verdicts(out))")
        #expect(verdicts(out)[1]["reason"] == .string("unknown_app"))
    }

    @Test mutating func aRepeatedJobIdInOneBatchIsDecidedOnce() throws {
        let device = try Device()
        let job = Self.attestationJob(device, jobId: "d-1")
        let out = try processor().process([message(job), message(job)])
        #expect(out.count == 2)
        #expect(out[0].value == out[1].value)
        #expect(out.map(\.sourceOffset) == [offset - 1, offset])
    }

    @Test mutating func aKeyAttestedForAnotherAppIsUnknown() throws {
        let device = try Device()
        store.appPolicies[AppIdentity(teamId: Self.teamId, bundleId: "com.example.other")] = AppPolicy(teamId: Self.teamId, bundleId: "com.example.other")
        let p = processor()
        _ = try p.process([message(Self.attestationJob(device, jobId: "o-a"))])
        let out = try p.process([message(Self.assertionJob(device, jobId: "o-1", counter: 1, bundleId: "com.example.other"))])
        #expect(verdicts(out)[0]["reason"] == .string("unknown_key"))
    }
}
