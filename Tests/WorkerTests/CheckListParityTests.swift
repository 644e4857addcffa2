import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import Foundation
import KafkaClient
import Store
import Testing
import Worker

/// The worker's batch and the offline `verify` run one check list (``JobVerifier/check(_:_:)``): the same
/// minted jobs, valid and broken at each step both paths share, get the same verdict from both (up to the
/// deviceIntelligence each derives from its own store), so a check that one path skips or reorders fails here.
@Suite struct CheckListParityTests {
    typealias B = BatchProcessorTests
    static let receivedAt = "2026-04-24T03:06:40Z"

    /// A job's members, the stored-device members the offline line adds for an assertion (the worker reads
    /// them from its store), and the job's name in failures.
    struct Case {
        let name: String
        let members: [(String, JSONValue)]
        var offlineExtra: [(String, JSONValue)] = []
    }

    static func attestation(
        _ name: String, _ device: Device, options: AttestationOptions = AttestationOptions(), receivedAt: String = receivedAt,
        edit: ([(String, JSONValue)]) -> [(String, JSONValue)] = { $0 }
    ) throws -> Case {
        let cdh = Digest.sha256.hash(Array(name.utf8))
        let minted = try B.pki.mintAttestation(
            device: device, teamId: B.teamId, bundleId: B.bundleId, clientDataHash: cdh, at: B.now, options: options)
        return Case(
            name: name,
            members: edit([
                ("jobId", .string(name)), ("teamId", .string(B.teamId)), ("bundleId", .string(B.bundleId)),
                ("keyId", .string(Base64.encode(device.keyId))),
                ("attestationObject", .string(Base64.encode(minted.attestationObject))),
                ("clientDataHash", .string(Base64.encode(cdh))), ("receivedAt", .string(receivedAt)),
            ]))
    }

    /// An assertion of `device` at `counter`; `stored` is the counter the key has when it is decided (nil: the
    /// key was never attested).
    static func assertion(
        _ name: String, _ device: Device, counter: UInt32, stored: UInt32?, options: AssertionOptions = AssertionOptions(),
        receivedAt: String = receivedAt, edit: ([(String, JSONValue)]) -> [(String, JSONValue)] = { $0 }
    ) throws -> Case {
        let cdh = Digest.sha256.hash(Array(name.utf8))
        let minted = try device.mintAssertion(teamId: B.teamId, bundleId: B.bundleId, clientDataHash: cdh, counter: counter, options: options)
        let extra: [(String, JSONValue)] = stored.map {
            [("publicKey", .string(Base64.encode(device.publicKeyX962))), ("previousCounter", .int(Int64($0)))]
        } ?? []
        return Case(
            name: name,
            members: edit([
                ("jobId", .string(name)), ("teamId", .string(B.teamId)), ("bundleId", .string(B.bundleId)),
                ("keyId", .string(Base64.encode(device.keyId))), ("assertion", .string(Base64.encode(minted.assertion))),
                ("clientDataHash", .string(Base64.encode(cdh))), ("receivedAt", .string(receivedAt)),
            ]),
            offlineExtra: extra)
    }

    /// Valid jobs and one broken at each shared step: fields, receivedAt bounds, the attestation checks in
    /// Apple's order, the assertion checks, an unknown key. Each key's jobs are decided in order, so the
    /// assertions' stored counters are what the earlier ones of the batch leave.
    static func cases() throws -> [Case] {
        let device = try Device()
        let other = try Device()
        let unknown = try Device()
        let replace: (String, JSONValue) -> ([(String, JSONValue)]) -> [(String, JSONValue)] = { name, value in
            { members in members.map { $0.0 == name ? (name, value) : $0 } }
        }
        // The job's subject and analytics metadata, echoed by both paths (on an accepted and a rejected job).
        let metadata: ([(String, JSONValue)]) -> [(String, JSONValue)] = { members in
            members + [
                ("subjectId", .string("user-42")), ("deviceModel", .string("iPhone15,2")), ("osVersion", .string("17.4")),
                ("appVersion", .string("2.1.0")), ("appBuildNumber", .string("210")), ("platform", .string("iOS")),
            ]
        }
        return [
            try attestation("att-ok", device, edit: metadata),
            try attestation("att-missing-field", try Device()) { $0.filter { $0.0 != "clientDataHash" } },
            try attestation("att-future", try Device(), receivedAt: "2026-04-24T03:10:00Z"),
            try attestation("att-too-old", try Device(), receivedAt: "2026-04-20T00:00:00Z"),
            try attestation("att-base64", try Device(), edit: replace("attestationObject", .string("not base64!"))),
            try attestation("att-cbor", try Device(), edit: replace("attestationObject", .string(Base64.encode([0xA1, 0x01])))),
            try attestation("att-nonce", try Device(), options: AttestationOptions(nonce: .value(Array(repeating: 7, count: 32)))),
            try attestation("att-key-id", try Device()) { members in
                members.map { $0.0 == "keyId" ? ("keyId", .string(Base64.encode(other.keyId))) : $0 }
            },
            try attestation("att-rp-id", try Device(), options: AttestationOptions(rpIdAppId: "OTHERTEAM1.com.example.other")),
            try attestation("att-counter", try Device(), options: AttestationOptions(counter: 1)),
            try attestation("att-development", try Device(), options: AttestationOptions(environment: .development)),
            try attestation("att-no-receipt", try Device(), options: AttestationOptions(receipt: .absent)),
            try assertion("asr-ok", device, counter: 1, stored: 0, edit: metadata),
            try assertion("asr-replay", device, counter: 1, stored: 1, edit: metadata),
            try assertion("asr-rp-id", device, counter: 2, stored: 1, options: AssertionOptions(rpIdAppId: "OTHERTEAM1.com.example.other")),
            try assertion("asr-signer", device, counter: 3, stored: 1, options: AssertionOptions(signingDevice: other)),
            try assertion("asr-future", device, counter: 4, stored: 1, receivedAt: "2026-04-24T03:10:00Z"),
            try assertion("asr-base64", device, counter: 5, stored: 1, edit: replace("assertion", .string("%%%"))),
            try assertion("asr-next", device, counter: 6, stored: 1),
            try assertion("asr-unknown-key", unknown, counter: 1, stored: nil),
        ]
    }

    /// The verdict without what each path derives from its own store (deviceIntelligence).
    static func comparable(_ verdict: JSONValue) -> [(String, JSONValue)] {
        guard case .object(let members) = verdict else { return [] }
        return members.filter { $0.0 != "deviceIntelligence" }
    }

    @Test func theWorkerAndTheOfflineVerifyGiveTheSameVerdicts() throws {
        let cases = try Self.cases()
        let store = FakeStore()
        store.appPolicies[AppIdentity(teamId: B.teamId, bundleId: B.bundleId)] = AppPolicy(teamId: B.teamId, bundleId: B.bundleId)
        let verifier = JobVerifier(trust: B.trust, clock: FixedClock(Timestamp(seconds: 1_777_000_000)))
        let processor = BatchProcessor(
            verifier: verifier, store: store, devices: DeviceCache(),
            settings: BatchProcessor.Settings(verdictsTopic: "verdicts", deadLetterTopic: "dead", maxMessageBytes: 64 * 1024))
        let messages = cases.enumerated().map { i, c in
            KafkaMessage(
                topic: "jobs", partition: 0, offset: Int64(i), key: nil, value: Array(JSONValue.object(c.members).serialized().utf8),
                headers: [], timestampMs: nil)
        }
        let worker = try processor.process(messages).map { JSONValue.parse($0.value)! }
        #expect(worker.count == cases.count)
        var outcomes = Set<String>()
        for (c, published) in zip(cases, worker) {
            let line = JSONValue.object(c.members + c.offlineExtra).serialized()
            let offline = verifier.offlineVerdict(for: line, policy: .production).json
            let (w, o) = (Self.comparable(published), Self.comparable(offline))
            #expect(w.map(\.0) == o.map(\.0), "\(c.name): members")
            for ((name, a), (_, b)) in zip(w, o) { #expect(a == b, "\(c.name): \(name) \(a.serialized()) vs \(b.serialized())") }
            #expect(published["schemaVersion"] == .int(Verdict.schemaVersion), "\(c.name)")
            let subject = c.members.first { $0.0 == "subjectId" }?.1
            #expect(published["subjectId"] == subject, "\(c.name): subjectId")
            #expect(published["deviceIntelligence"]?["subjectId"] == subject, "\(c.name): worker deviceIntelligence")
            #expect(offline["deviceIntelligence"]?["subjectId"] == subject, "\(c.name): offline deviceIntelligence")
            for name in Verdict.analyticsFields {
                #expect(published[name] == c.members.first { $0.0 == name }?.1, "\(c.name): \(name)")
            }
            outcomes.insert(published["reason"]?.stringValue ?? "ok")
        }
        // The set is what it claims to be: accepted jobs and a distinct reason per broken step.
        #expect(outcomes.count == 14, "\(outcomes.sorted())")
    }
}
