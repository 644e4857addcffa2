import AttestCore
import AttestCrypto
import AttestVerifier
import DeviceIntelligence

extension JobVerifier {
    /// A line longer than this is not read as a job (CONTRACT 7: messages up to 256 KiB).
    public static let maxLineBytes = 256 * 1024

    /// The offline `verify`'s verdict for one JSON line: the worker's checks (``check(_:_:)``) with the app
    /// registered under `policy`, its challenges the backend's, no quota, and the stored device the line
    /// carries (`publicKey`, `previousCounter`; absent: unknown key; `revokedAt`: revoked); deviceIntelligence
    /// from the job alone.
    public func offlineVerdict(for line: String, policy: EnvironmentPolicy) -> Verdict {
        let now = clock.now()
        guard line.utf8.count <= Self.maxLineBytes else {
            return rejection(jobId: nil, VerificationFailure(.jobInvalid, .tooLarge, "line over 256 KiB"), at: now)
        }
        guard let json = JSONValue.parse(Array(line.utf8)) else {
            return rejection(jobId: nil, VerificationFailure(.jobInvalid, .invalidField, "line is not JSON"), at: now)
        }
        let job: Job
        switch Job.parse(json) {
        case .failure(let invalid): return rejection(jobId: invalid.jobId, invalid.failure, at: now)
        case .success(let parsed): job = parsed
        }
        var verdict: Verdict
        switch storedKey(of: job) {
        case .failure(let failure):
            verdict = rejection(jobId: job.jobId, failure, at: now)
        case .success(let key):
            verdict = check(job, JobCheckInputs(now: now, app: AppRules(environments: policy), key: key, keyRevokedAt: job.storedRevokedAt)).verdict
        }
        verdict.deviceIntelligence = DeviceIntelligence.offline(verdict, of: job)
        return verdict
    }

    /// The stored device an assertion line carries: nil when it has no `publicKey` (an unknown key).
    private func storedKey(of job: Job) -> Result<AttestedKey?, VerificationFailure> {
        guard case .assertion = job.payload, let text = job.storedPublicKey else { return .success(nil) }
        guard let point = Base64.decode(text), let publicKey = ECPublicKey(p256Point: point) else {
            return .failure(VerificationFailure(.jobInvalid, .invalidField, "publicKey is not a P-256 point"))
        }
        return .success(AttestedKey(device: StoredDevice(publicKey: publicKey, counter: job.storedCounter ?? 0), environment: nil))
    }
}
