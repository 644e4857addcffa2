import AttestCore
import AttestJobs
import AttestMint
import AttestVerifier
import Foundation
import KafkaClient
import Store
import Testing
import Worker

/// A revoked key (`device revoke`, written by any process into the devices row): the worker's cache does
/// not keep accepting it past the next batch's prefetch, its assertions and its attestation sent again get
/// reattest_required/key_revoked after the object checks, and the offline verify agrees given `revokedAt`.
@Suite struct KeyRevocationTests {
    typealias B = BatchProcessorTests

    @Test func aRevocationInTheStoreStopsTheCachedKeyFromTheNextBatch() throws {
        var harness = B()
        let processor = harness.processor()
        let device = try Device()
        let first = try processor.process([
            harness.message(B.attestationJob(device, jobId: "rv-att")), harness.message(B.assertionJob(device, jobId: "rv-1", counter: 1)),
        ])
        #expect(harness.verdicts(first).map { $0["ok"] } == [.bool(true), .bool(true)])
        // Another process revokes the key; this processor's cache still holds it.
        let revokedAt = Timestamp(seconds: 1_776_999_000)
        harness.store.devices[device.keyId]?.revokedAt = revokedAt
        let later = try processor.process([
            harness.message(B.assertionJob(device, jobId: "rv-2", counter: 2)),
            harness.message(B.attestationJob(device, jobId: "rv-att-again")),
            // A forged assertion still gets its own reason: the revocation comes after the object checks.
            harness.message(B.assertionJob(try Device(), jobId: "rv-forged", counter: 3)),
        ])
        let verdicts = harness.verdicts(later)
        for verdict in verdicts.prefix(2) {
            #expect(verdict["ok"] == .bool(false))
            #expect(verdict["code"] == .string("reattest_required"))
            #expect(verdict["reason"] == .string("key_revoked"), "\(verdict.serialized())")
        }
        #expect(verdicts[2]["reason"] == .string("unknown_key"))
        #expect(harness.store.devices[device.keyId]?.counter == 1, "a refused assertion moves no counter")
    }

    @Test func theOfflineVerifyAgrees() throws {
        let device = try Device()
        let verifier = JobVerifier(trust: B.trust, clock: FixedClock(Timestamp(seconds: 1_777_000_000)))
        let job = JSONValue.parse(B.assertionJob(device, jobId: "rv-offline", counter: 2))!
        guard case .object(let members) = job else { return }
        let stored: [(String, JSONValue)] = [("publicKey", .string(Base64.encode(device.publicKeyX962))), ("previousCounter", .int(1))]
        let revoked = verifier.offlineVerdict(
            for: JSONValue.object(members + stored + [("revokedAt", .string("2026-04-24T03:00:00Z"))]).serialized(), policy: .production)
        #expect(revoked.failure == VerificationFailure(.reattestRequired, .keyRevoked, ""))
        #expect(revoked.counter == nil)
        let valid = verifier.offlineVerdict(for: JSONValue.object(members + stored).serialized(), policy: .production)
        #expect(valid.failure == nil)
        let bad = verifier.offlineVerdict(
            for: JSONValue.object(members + stored + [("revokedAt", .string("yesterday"))]).serialized(), policy: .production)
        #expect(bad.failure == VerificationFailure(.jobInvalid, .invalidField, ""))
    }
}
