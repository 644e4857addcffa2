import AttestCore
import AttestCrypto
import AttestVerifier
import DeviceIntelligence

extension JobVerifier {
    /// The offline `verify`'s verdict for one JSON line, classified as the worker classifies a record's value
    /// (``RecordClassifier``, at the default size limit). A line that is no job is answered as the worker
    /// answers a record it can (under the jobId, teamId, bundleId and keyId a scan still reads), else under
    /// a null jobId, where the worker dead-letters alone. A job gets the worker's checks (``check(_:_:)``)
    /// with the app registered under `policy`, its challenges the backend's, no quota, and the stored device
    /// the line carries (`publicKey`, `previousCounter`; absent: unknown key; `revokedAt`: revoked);
    /// deviceIntelligence from the job alone.
    ///
    /// An Android line is checked under `android` with the line's package name and, when it names them,
    /// its `signingCertificateDigests`; an assertion against the line's `publicKey` (SubjectPublicKeyInfo).
    public func offlineVerdict(for line: String, policy: EnvironmentPolicy, android: AndroidPolicy = AndroidPolicy(packageName: "", signingCertificateDigests: nil)) -> Verdict {
        let now = clock.now()
        let value = Array(line.utf8)
        let job: Job
        switch RecordClassifier().classify(value: value, bytes: value.count) {
        case .failure(let notAJob):
            return rejection(answering: notAJob.answerFields(in: value), notAJob.failure, at: now)
        case .success(.invalidJob(let jobId, _, let failure)): return rejection(jobId: jobId, failure, at: now)
        case .success(.job(let parsed)): job = parsed
        }
        if let androidJob = job.android {
            var androidPolicy = android
            androidPolicy.packageName = androidJob.packageName
            androidPolicy.signingCertificateDigests = androidJob.signingCertificateDigests
            let inputs = JobCheckInputs(
                now: now, app: AppRules(environments: policy, android: androidPolicy),
                androidKey: androidJob.storedPublicKey.map(AttestedAndroidKey.init))
            var verdict = check(job, inputs).verdict
            verdict.deviceIntelligence = DeviceIntelligence.offline(verdict, of: androidJob)
            return verdict
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
