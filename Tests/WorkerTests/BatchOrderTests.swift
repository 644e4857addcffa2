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

/// A batch is decided in batch order whatever the threads do (issue 26): the object checks run in parallel
/// across keys, but the quota and the ledger (risk, counts) are applied one job after the other in the
/// order the jobs were consumed, so the same batch always gets the same verdicts.
@Suite struct BatchOrderTests {
    typealias B = BatchProcessorTests
    static let app = AppIdentity(teamId: B.teamId, bundleId: B.bundleId)

    /// The verdicts of `values` decided as one batch by a fresh store and processor on `threads` threads.
    static func decide(_ values: [[UInt8]], threads: Int, policy: AppPolicy) throws -> [String] {
        let store = FakeStore()
        store.appPolicies[app] = policy
        let processor = BatchProcessor(
            verifier: JobVerifier(trust: B.trust, clock: FixedClock(Timestamp(seconds: 1_777_000_000))), store: store,
            devices: DeviceCache(), settings: BatchProcessor.Settings(verdictsTopic: "verdicts", deadLetterTopic: "dead", threads: threads))
        let messages = values.enumerated().map { i, value in
            KafkaMessage(topic: "jobs", partition: 0, offset: Int64(i), key: nil, value: value, headers: [], timestampMs: nil)
        }
        return try processor.process(messages).map { String(decoding: $0.value, as: UTF8.self) }
    }

    /// A month's last quota slots go to the first new devices in the batch, on any number of threads: the
    /// first key's valid attestation comes after thirty failing ones (each chain verified before its nonce
    /// is found wrong), so a lane is still on that key while the others reach the later keys' attestations.
    @Test func quotaSlotsGoToTheFirstNewDevicesInBatchOrder() throws {
        let policy = AppPolicy(teamId: Self.app.teamId, bundleId: Self.app.bundleId, madLimit: 3, graceDays: 0)
        var jobs = [[UInt8]]()
        var expected = [JSONValue?]()
        for n in 0..<8 {
            let device = try Device()
            for slow in 0..<(n == 0 ? 30 : 0) {
                jobs.append(Self.withOtherClientDataHash(B.attestationJob(device, jobId: "q-\(n)-\(slow)"), of: "q-\(n)-\(slow)"))
                expected.append(.string("nonce_mismatch"))
            }
            jobs.append(B.attestationJob(device, jobId: "q-\(n)"))
            expected.append(n < 3 ? nil : .string("quota_exceeded"))
        }
        for threads in [1, 4, 4, 4, 8] {
            let reasons = try Self.decide(jobs, threads: threads, policy: policy).map { JSONValue.parse(Array($0.utf8))?["reason"] }
            #expect(reasons == expected, "\(threads) threads: \(reasons.suffix(8))")
        }
    }

    /// `job` (whose clientDataHash is the SHA-256 of `jobId`) claiming another clientDataHash than the one
    /// its attestation signed.
    static func withOtherClientDataHash(_ job: [UInt8], of jobId: String) -> [UInt8] {
        let signed = Base64.encode(Digest.sha256.hash(Array(jobId.utf8)))
        let other = Base64.encode(Digest.sha256.hash(Array("another request".utf8)))
        return Array(String(decoding: job, as: UTF8.self).replacingOccurrences(of: signed, with: other).utf8)
    }

    /// Keys sharing one fingerprint share one device history: each verdict's device intelligence is the
    /// history of the jobs before it in the batch, so every run gives the same verdicts, byte for byte.
    @Test func aFingerprintSharedByKeysIsScoredInBatchOrder() throws {
        let policy = AppPolicy(teamId: Self.app.teamId, bundleId: Self.app.bundleId, madLimit: 5, graceDays: 0)
        let metadata: [(String, JSONValue)] = [("deviceFingerprint", .string("shared-fp")), ("deviceId", .string("device-1"))]
        var jobs = [[UInt8]]()
        for n in 0..<8 {
            let device = try Device()
            jobs.append(B.attestationJob(device, jobId: "f-\(n)", metadata: metadata))
            jobs.append(B.assertionJob(device, jobId: "f-\(n)-1", counter: 1))
            // Every other key's second request replays its counter: a failure the key authenticates.
            jobs.append(B.assertionJob(device, jobId: "f-\(n)-2", counter: n % 2 == 0 ? 1 : 2))
        }
        let reference = try Self.decide(jobs, threads: 1, policy: policy)
        let histories = reference.compactMap { JSONValue.parse(Array($0.utf8))?["deviceIntelligence"] }
        #expect(Set(histories.map { $0.serialized() }).count > 8, "the shared history moves job by job")
        for _ in 0..<6 {
            #expect(try Self.decide(jobs, threads: 4, policy: policy) == reference)
        }
    }
}
