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

    /// How far a job's receivedAt may lie from now (CONTRACT 7 defaults: 24 hours back, 60 seconds ahead) and,
    /// when set, from the message's broker timestamp.
    public struct TimeBounds: Sendable {
        public var maxAgeSeconds: Int64 = 86_400
        public var maxFutureSkewSeconds: Int64 = 60
        /// How long before the message's broker timestamp its receivedAt may be (ATTEST_MAX_RECEIVED_BEFORE_BROKER);
        /// nil: no check against the broker timestamp. On a topic with `message.timestamp.type=LogAppendTime`
        /// the broker stamps the append, so a producer cannot backdate receivedAt by more than this (to
        /// revive an expired certificate or challenge); time spent queued in Kafka never counts against it.
        public var maxReceivedBeforeBrokerSeconds: Int64?

        public init(maxAgeSeconds: Int64 = 86_400, maxFutureSkewSeconds: Int64 = 60, maxReceivedBeforeBrokerSeconds: Int64? = nil) {
            self.maxAgeSeconds = maxAgeSeconds
            self.maxFutureSkewSeconds = maxFutureSkewSeconds
            self.maxReceivedBeforeBrokerSeconds = maxReceivedBeforeBrokerSeconds
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

    /// Checks the receivedAt bounds against `now` and, when the bound is configured and the message has one,
    /// the broker timestamp (milliseconds since 1970, as Kafka carries it); nil when the job may be verified.
    ///
    /// In 128-bit microseconds, so no configured bound or broker timestamp (9.3e15 ms included) overflows.
    /// A negative broker timestamp is Kafka's "none" (-1) or garbage: the broker check is skipped, as for
    /// a missing one.
    public func checkReceivedAt(_ job: Job, now: Timestamp, brokerTimestampMs: Int64? = nil) -> VerificationFailure? {
        let received = Int128(job.receivedAt.microseconds)
        let skew = Int128(timeBounds.maxFutureSkewSeconds) * 1_000_000
        if received > Int128(now.microseconds) + skew {
            return VerificationFailure(.jobInvalid, .receivedAtOutOfRange, "receivedAt is in the future")
        }
        if received < Int128(now.microseconds) - Int128(timeBounds.maxAgeSeconds) * 1_000_000 {
            return VerificationFailure(.jobInvalid, .receivedAtOutOfRange, "receivedAt is older than the maximum job age")
        }
        guard let allowance = timeBounds.maxReceivedBeforeBrokerSeconds, let ms = brokerTimestampMs, ms >= 0 else { return nil }
        let broker = Int128(ms) * 1000
        if received < broker - Int128(allowance) * 1_000_000 {
            return VerificationFailure(
                .jobInvalid, .receivedAtBrokerMismatch, "receivedAt is more than \(allowance) s before the broker's timestamp")
        }
        if received > broker + skew {
            return VerificationFailure(.jobInvalid, .receivedAtBrokerMismatch, "receivedAt is after the broker's timestamp")
        }
        return nil
    }

    /// Decides an attestation job under the app's environment policy; `now` defaults to the clock's reading
    /// (the worker passes its batch's, the one its other checks used).
    public func decide(
        _ request: AttestationRequest, of job: Job, policy: EnvironmentPolicy, now: Timestamp? = nil
    ) -> (Verdict, VerifiedAttestation?) {
        decide(job, now: now, verify: { attestations.verify(request, policy: policy, at: job.receivedAt) }) { verdict, verified in
            verdict.environment = verified.environment
            verdict.counter = verified.counter
            verdict.publicKey = verified.publicKey
            verdict.receipt = verified.receipt
            verdict.extensions = verified.extensions
        }
    }

    /// Decides an assertion job against the stored device state (nil: no key attested for this keyId).
    public func decide(
        _ request: AssertionRequest, of job: Job, device: StoredDevice?, now: Timestamp? = nil
    ) -> (Verdict, VerifiedAssertion?) {
        decide(job, now: now, verify: { assertions.verify(request, device: device) }) { verdict, verified in
            verdict.counter = verified.counter
            verdict.extensions = verified.extensions
        }
    }

    /// The receivedAt bounds, then the core's decision at receivedAt, recorded into the verdict.
    private func decide<Verified>(
        _ job: Job, now: Timestamp?, verify: () -> Result<Verified, VerificationFailure>,
        record: (inout Verdict, Verified) -> Void
    ) -> (Verdict, Verified?) {
        let now = now ?? clock.now()
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
