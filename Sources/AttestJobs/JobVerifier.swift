import AttestCore
import AttestCrypto
import AttestVerifier

/// Turns one job into a verdict with the verification core: the receivedAt bounds, then the attestation
/// or assertion checks at the job's receivedAt. Shared by the offline `verify` and the worker.
public struct JobVerifier: Sendable {
    public let attestations: AttestationVerifier
    public let assertions: AssertionVerifier
    public let clock: any Clock
    public let timeBounds: TimeBounds

    /// How far a job's receivedAt may lie from now (SPEC 7 defaults: 24 hours back, 60 seconds ahead).
    public struct TimeBounds: Sendable {
        public var maxAgeSeconds: Int64 = 86_400
        public var maxFutureSkewSeconds: Int64 = 60

        public init(maxAgeSeconds: Int64 = 86_400, maxFutureSkewSeconds: Int64 = 60) {
            self.maxAgeSeconds = maxAgeSeconds
            self.maxFutureSkewSeconds = maxFutureSkewSeconds
        }
    }

    public init(trust: TrustConfiguration, clock: any Clock, timeBounds: TimeBounds = TimeBounds(), limits: VerifierLimits = VerifierLimits()) {
        attestations = AttestationVerifier(trust: trust, limits: limits)
        assertions = AssertionVerifier(limits: limits)
        self.clock = clock
        self.timeBounds = timeBounds
    }

    /// The verdict for a message that could not be read as a job.
    public func rejection(jobId: String?, _ failure: VerificationFailure) -> Verdict {
        var verdict = Verdict(job: nil, verifiedAt: clock.now())
        verdict.jobId = jobId
        verdict.failure = failure
        return verdict
    }

    /// Checks the receivedAt bounds; nil when the job may be verified.
    public func checkReceivedAt(_ job: Job, now: Timestamp) -> VerificationFailure? {
        if job.receivedAt > now.adding(seconds: timeBounds.maxFutureSkewSeconds) {
            return VerificationFailure(.jobInvalid, .receivedAtOutOfRange, "receivedAt is in the future")
        }
        if job.receivedAt < now.adding(seconds: -timeBounds.maxAgeSeconds) {
            return VerificationFailure(.jobInvalid, .receivedAtOutOfRange, "receivedAt is older than the maximum job age")
        }
        return nil
    }

    /// Decides an attestation job under the app's environment policy.
    public func decide(_ request: AttestationRequest, of job: Job, policy: EnvironmentPolicy) -> (Verdict, VerifiedAttestation?) {
        decide(job, verify: { attestations.verify(request, policy: policy, at: job.receivedAt) }) { verdict, verified in
            verdict.environment = verified.environment
            verdict.counter = verified.counter
            verdict.publicKey = verified.publicKey
            verdict.receipt = verified.receipt
            verdict.extensions = verified.extensions
        }
    }

    /// Decides an assertion job against the stored device state (nil: no key attested for this keyId).
    public func decide(_ request: AssertionRequest, of job: Job, device: StoredDevice?) -> (Verdict, VerifiedAssertion?) {
        decide(job, verify: { assertions.verify(request, device: device) }) { verdict, verified in
            verdict.counter = verified.counter
            verdict.extensions = verified.extensions
        }
    }

    /// The receivedAt bounds, then the core's decision at receivedAt, recorded into the verdict.
    private func decide<Verified>(
        _ job: Job, verify: () -> Result<Verified, VerificationFailure>, record: (inout Verdict, Verified) -> Void
    ) -> (Verdict, Verified?) {
        let now = clock.now()
        var verdict = Verdict(job: job, verifiedAt: now)
        if let failure = checkReceivedAt(job, now: now) {
            verdict.failure = failure
            return (verdict, nil)
        }
        verdict.verificationTime = job.receivedAt
        switch verify() {
        case .failure(let failure):
            verdict.failure = failure
            return (verdict, nil)
        case .success(let verified):
            record(&verdict, verified)
            return (verdict, verified)
        }
    }
}
