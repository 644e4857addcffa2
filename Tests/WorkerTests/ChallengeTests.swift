import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import Foundation
import KafkaClient
import Observability
import PostgresClient
import Store
import Synchronization
import Testing
import Worker

/// Worker-issued challenges in the batch processor (CONTRACT 7 check order and single use) with the FakeStore,
/// and the issuance endpoint's answers without a database.
@Suite struct ChallengeTests {
    static let teamId = BatchProcessorTests.teamId
    static let bundleId = "com.example.challenges"
    /// The fixed clock's instant, and the receivedAt of every job here.
    static let receivedAt = Timestamp(seconds: 1_777_000_000)

    let store = FakeStore()
    var offset: Int64 = 0

    init() {
        store.appPolicies[AppIdentity(teamId: Self.teamId, bundleId: Self.bundleId)] = AppPolicy(
            teamId: Self.teamId, bundleId: Self.bundleId, challenges: .worker)
        store.appPolicies[AppIdentity(teamId: Self.teamId, bundleId: BatchProcessorTests.bundleId)] = AppPolicy(
            teamId: Self.teamId, bundleId: BatchProcessorTests.bundleId)
    }

    func processor() -> BatchProcessor {
        BatchProcessor(
            verifier: JobVerifier(trust: BatchProcessorTests.trust, clock: FixedClock(Self.receivedAt)), store: store,
            devices: DeviceCache(), settings: BatchProcessor.Settings(verdictsTopic: "verdicts", deadLetterTopic: "dead"))
    }

    /// Issues a challenge in the fake store, `age` seconds before the jobs' receivedAt.
    func issue(age: Int64 = 60, bundleId: String = bundleId) -> String {
        let bytes = try! SecureRandom.bytes(32)
        store.challenges[bytes] = (Self.teamId + "." + bundleId, Self.receivedAt.adding(seconds: 300 - age), nil)
        return Base64.encode(bytes)
    }

    mutating func message(_ value: [UInt8]) -> KafkaMessage {
        offset += 1
        return KafkaMessage(topic: "jobs", partition: 0, offset: offset, key: nil, value: value, headers: [], timestampMs: nil)
    }

    /// An attestation job whose clientDataHash is SHA-256 of `binds` (the challenge's bytes by default).
    static func attestation(_ device: Device, jobId: String, challenge: String?, binds: [UInt8]? = nil, bundleId: String = bundleId) -> [UInt8] {
        let cdh = Digest.sha256.hash(binds ?? challenge.flatMap(Base64.decode) ?? Array(jobId.utf8))
        let minted = try! BatchProcessorTests.pki.mintAttestation(
            device: device, teamId: teamId, bundleId: bundleId, clientDataHash: cdh, at: BatchProcessorTests.now)
        var members: [(String, JSONValue)] = [
            ("jobId", .string(jobId)), ("teamId", .string(teamId)), ("bundleId", .string(bundleId)),
            ("keyId", .string(Base64.encode(device.keyId))), ("attestationObject", .string(Base64.encode(minted.attestationObject))),
            ("clientDataHash", .string(Base64.encode(cdh))), ("receivedAt", .string(receivedAt.rfc3339)),
        ]
        if let challenge { members.append(("challenge", .string(challenge))) }
        return Array(JSONValue.object(members).serialized().utf8)
    }

    func outcome(_ out: Outbound) -> (ok: Bool, code: String?, reason: String?) {
        let verdict = JSONValue.parse(out.value)!
        return (verdict["ok"] == .bool(true), verdict["code"]?.stringValue, verdict["reason"]?.stringValue)
    }

    @Test mutating func anIssuedChallengeIsConsumedOnceAndTheSecondJobIsTold() throws {
        let challenge = issue()
        let first = try processor().process([message(Self.attestation(try Device(), jobId: "c-1", challenge: challenge))])
        #expect(outcome(first[0]).ok, "\(String(decoding: first[0].value, as: UTF8.self))")
        let second = try processor().process([message(Self.attestation(try Device(), jobId: "c-2", challenge: challenge))])
        #expect(outcome(second[0]) == (false, "challenge_already_used", "challenge_already_used"))
        #expect(store.challenges[Base64.decode(challenge)!]?.usedBy == "c-1")
    }

    @Test mutating func twoJobsInOneBatchShareOneRoundTripAndTheFirstWins() throws {
        let challenge = issue()
        let other = issue()
        let out = try processor().process([
            message(Self.attestation(try Device(), jobId: "b-1", challenge: challenge)),
            message(Self.attestation(try Device(), jobId: "b-2", challenge: challenge)),
            message(Self.attestation(try Device(), jobId: "b-3", challenge: other)),
        ])
        #expect(out.map { outcome($0).code } == [nil, "challenge_already_used", nil])
        #expect(store.consumeCalls == 1)
    }

    @Test mutating func aJobRedeliveredAfterACrashKeepsTheChallengeItConsumed() throws {
        let challenge = issue()
        let job = message(Self.attestation(try Device(), jobId: "crash-1", challenge: challenge))
        _ = try processor().process([job])
        // The crash: the challenge stays consumed by this job, its verdict was never stored.
        store.verdicts[ScopedJobId(app: AppIdentity(teamId: Self.teamId, bundleId: Self.bundleId), jobId: "crash-1")] = nil
        let again = try processor().process([job])
        #expect(outcome(again[0]).ok)
    }

    @Test mutating func expiryIsMeasuredAtReceivedAt() throws {
        let stale = issue(age: 301)
        let fresh = issue(age: 300)
        let out = try processor().process([
            message(Self.attestation(try Device(), jobId: "e-1", challenge: stale)),
            message(Self.attestation(try Device(), jobId: "e-2", challenge: fresh)),
        ])
        #expect(outcome(out[0]) == (false, "challenge_expired", "challenge_expired"))
        #expect(outcome(out[1]).ok)
    }

    @Test mutating func aMissingUnknownOrForeignChallengeIsInvalid() throws {
        let foreign = issue(bundleId: BatchProcessorTests.bundleId)
        let out = try processor().process([
            message(Self.attestation(try Device(), jobId: "i-1", challenge: nil)),
            message(Self.attestation(try Device(), jobId: "i-2", challenge: Base64.encode(try SecureRandom.bytes(32)))),
            message(Self.attestation(try Device(), jobId: "i-3", challenge: foreign)),
            message(Self.attestation(try Device(), jobId: "i-4", challenge: "not base64!")),
        ])
        #expect(outcome(out[0]) == (false, "challenge_invalid", "missing_field"))
        #expect(outcome(out[1]) == (false, "challenge_invalid", "challenge_unknown"))
        #expect(outcome(out[2]) == (false, "challenge_invalid", "challenge_unknown"))
        #expect(outcome(out[3]) == (false, "challenge_invalid", "malformed_base64"))
        #expect(store.challenges[Base64.decode(foreign)!]?.usedBy == nil)
    }

    @Test mutating func anUnboundChallengeIsConsumedAndTheBindingDecides() throws {
        let challenge = issue()
        let out = try processor().process([
            message(Self.attestation(try Device(), jobId: "m-1", challenge: challenge, binds: Array("something else".utf8)))
        ])
        #expect(outcome(out[0]) == (false, "client_data_hash_invalid", "challenge_mismatch"))
        #expect(store.challenges[Base64.decode(challenge)!]?.usedBy == "m-1")
    }

    @Test mutating func earlierChecksComeFirstAndBackendAppsMakeNoClaim() throws {
        let challenge = issue()
        var late = JSONValue.parse(Self.attestation(try Device(), jobId: "o-1", challenge: challenge))!
        if case .object(var members) = late {
            members.removeAll { $0.0 == "receivedAt" }
            members.append(("receivedAt", .string(Self.receivedAt.adding(seconds: 3600).rfc3339)))
            late = .object(members)
        }
        let out = try processor().process([
            message(Array(late.serialized().utf8)),
            message(Self.attestation(try Device(), jobId: "o-2", challenge: nil, bundleId: BatchProcessorTests.bundleId)),
        ])
        #expect(outcome(out[0]) == (false, "job_invalid", "received_at_out_of_range"))
        #expect(outcome(out[1]).ok)
        #expect(store.consumeCalls == 0)
        #expect(store.challenges[Base64.decode(challenge)!]?.usedBy == nil)
    }

    // MARK: Issuance endpoint

    /// The shared secret every request here presents.
    static let secret = String(repeating: "s", count: 32)

    static func endpoint(perApp: RateLimitStore.Limit = .init(perMinute: 60, burst: 2), buckets: CountingBuckets = CountingBuckets()) -> ChallengeEndpoint {
        ChallengeEndpoint(
            issue: { teamId, bundleId throws(ChallengeIssuer.IssueError) in
                guard teamId == Self.teamId else { throw .unknownApp }
                return IssuedChallenge(
                    bytes: Array(repeating: 7, count: 32), teamId: teamId, bundleId: bundleId, issuedAt: receivedAt,
                    expiresAt: receivedAt.adding(seconds: 300))
            }, take: buckets.take,
            authenticator: ChallengeAuthenticator(sharedSecret: secret, keyHashes: { _, _ in [] }),
            limits: .init(perApp: perApp, failuresPerAddress: .init(perMinute: 60, burst: 60), failures: .init(perMinute: 60, burst: 60)),
            metrics: WorkerMetrics(), logger: Logger(level: .error, sink: { _ in }))
    }

    static func post(
        _ endpoint: ChallengeEndpoint, _ body: String, authorization: String? = "Bearer " + secret, from address: String = "192.0.2.1"
    ) -> (status: Int, json: JSONValue?, headers: [String: String]) {
        let response = endpoint.handle(
            HTTPRequest(
                method: "POST", path: ChallengeEndpoint.path, body: Array(body.utf8),
                headers: authorization.map { [(name: "Authorization", value: $0)] } ?? [], clientAddress: address))
        return (response.status, JSONValue.parse(response.body), Dictionary(response.headers.map { ($0.name, $0.value) }) { a, _ in a })
    }

    @Test func issuanceAnswersTheChallengeOrAJSONError() {
        let endpoint = Self.endpoint(perApp: .init(perMinute: 600, burst: 100))
        let created = Self.post(endpoint, #"{"teamId":"\#(Self.teamId)","bundleId":"com.x"}"#)
        #expect(created.status == 201)
        #expect(created.json?["challenge"] == .string(Base64.encode(Array(repeating: 7, count: 32))))
        #expect(created.json?["expiresAt"] == .string("2026-04-24T03:11:40Z"))
        #expect(created.json?["bundleId"] == .string("com.x"))
        #expect(Self.post(endpoint, #"{"teamId":"OTHER12345","bundleId":"com.x"}"#).status == 404)
        #expect(Self.post(endpoint, #"{"teamId":"OTHER12345","bundleId":"com.x"}"#).json?["error"] == .string("unknown_app"))
        // Spellings no job could name are refused before any lookup.
        for (team, bundle) in [("OTHER", "com.x"), ("\(Self.teamId).com", "x"), (Self.teamId.lowercased(), "com.x"), (Self.teamId, "com..x")] {
            #expect(Self.post(endpoint, #"{"teamId":"\#(team)","bundleId":"\#(bundle)"}"#).status == 400, "\(team) \(bundle)")
        }
        for bad in [#"{"teamId":"T"}"#, #"{"teamId":"T","bundleId":"B","x":1}"#, #"{"teamId":"T","bundleId":2}"#,
            #"{"teamId":"T","bundleId":"B",}"#, #"{"teamId":"T","teamId":"T"}"#, "[]", "", #"{"teamId":"","bundleId":"B"}"#]
        {
            let answer = Self.post(endpoint, bad)
            #expect(answer.status == 400, "\(bad)")
            #expect(answer.json?["error"] == .string("invalid_request"))
        }
        #expect(Self.post(endpoint, String(repeating: " ", count: 5000)).status == 413)
    }

    @Test func issuanceIsRateLimitedPerApp() {
        let endpoint = Self.endpoint()
        let body = #"{"teamId":"\#(Self.teamId)","bundleId":"com.limited"}"#
        #expect(Self.post(endpoint, body).status == 201)
        #expect(Self.post(endpoint, body).status == 201)
        let limited = Self.post(endpoint, body)
        #expect(limited.status == 429)
        #expect(limited.headers["Retry-After"] == "2", "a burst of 2 at 60 per minute refills in 2 s")
        #expect(Self.post(endpoint, #"{"teamId":"\#(Self.teamId)","bundleId":"com.other"}"#).status == 201)
    }
}

/// Token buckets in memory that never refill, with the same answers as ``RateLimitStore`` (a full
/// refill's wait as Retry-After): for endpoint tests without a database.
final class CountingBuckets: Sendable {
    private let taken = Mutex<[String: Int]>([:])

    var take: ChallengeEndpoint.Take {
        { [self] bucket, limit in
            taken.withLock { taken in
                let count = taken[bucket, default: 0]
                guard count < limit.burst else { return Int(limit.refillSeconds) }
                taken[bucket] = count + 1
                return nil
            }
        }
    }

    func count(_ bucket: String) -> Int { taken.withLock { $0[bucket] ?? 0 } }
}
