import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import ConcurrentMap
import Foundation

/// The job stream of `bench soak`: a fixed pool of devices attests once, then signs assertions round the
/// pool for as long as the run lasts, minted as they are needed. The pool is fixed so that the worker's
/// legitimate state (its device cache) stops growing once every device is known: whatever memory still
/// grows after that is a leak. One assertion in twenty replays the device's last counter (5% invalid).
final class SoakWorkload {
    private struct Member {
        let device: Device
        let keyId: String
        var counter: UInt32 = 0
    }

    static let invalidEvery = 20

    let attestations: [PipelineWorkload.Message]
    private var pool: [Member]
    private let teamId: String
    private let bundleId: String
    private let prefix: String
    private var issued = 0

    init(pki: TestPKI, teamId: String, bundleId: String, prefix: String, devices: Int, threads: Int) throws {
        self.teamId = teamId
        self.bundleId = bundleId
        self.prefix = prefix
        let minted = try concurrentMap(devices, threads: threads) { d -> (Member, PipelineWorkload.Message) in
            let device = try Device()
            let keyId = Base64.encode(device.keyId)
            let jobId = "\(prefix)-a\(d)"
            let hash = Digest.sha256.hash(Array(jobId.utf8))
            let attestation = try pki.mintAttestation(device: device, teamId: teamId, bundleId: bundleId, clientDataHash: hash, at: Date())
            let message = PipelineWorkload.Message(jobId: jobId, keyId: keyId, expectedOK: true, [
                ("kind", .string("attestation")), ("teamId", .string(teamId)), ("bundleId", .string(bundleId)),
                ("keyId", .string(keyId)), ("attestationObject", .string(Base64.encode(attestation.attestationObject))),
                ("clientDataHash", .string(Base64.encode(hash))),
            ])
            return (Member(device: device, keyId: keyId), message)
        }
        pool = minted.map(\.0)
        attestations = minted.map(\.1)
    }

    /// The next `count` assertions, round the pool; every `invalidEvery`-th replays its device's counter.
    func next(_ count: Int) throws -> [PipelineWorkload.Message] {
        var batch = [PipelineWorkload.Message]()
        batch.reserveCapacity(count)
        for _ in 0..<count {
            let n = issued
            issued += 1
            let d = n % pool.count
            let valid = n % Self.invalidEvery != Self.invalidEvery - 1
            let counter = valid ? pool[d].counter + 1 : pool[d].counter
            let jobId = "\(prefix)-s\(n)"
            let hash = Digest.sha256.hash(Array(jobId.utf8))
            let assertion = try pool[d].device.mintAssertion(teamId: teamId, bundleId: bundleId, clientDataHash: hash, counter: counter)
            if valid { pool[d].counter = counter }
            batch.append(PipelineWorkload.Message(jobId: jobId, keyId: pool[d].keyId, expectedOK: valid, [
                ("kind", .string("assertion")), ("teamId", .string(teamId)), ("bundleId", .string(bundleId)),
                ("keyId", .string(pool[d].keyId)), ("assertion", .string(Base64.encode(assertion.assertion))),
                ("clientDataHash", .string(Base64.encode(hash))),
            ]))
        }
        return batch
    }
}
