import AttestCore
import AttestCrypto
import AttestVerifier

/// Turns one job into a verdict: one ordered list of checks (receivedAt bounds, app, challenge, the
/// verification core's checks at the job's receivedAt, environment policy, quota) against a single `now`,
/// run by the worker and the offline `verify` alike, so the two cannot drift.
public struct JobVerifier: Sendable {
    public let attestations: AttestationVerifier
    public let assertions: AssertionVerifier
    public let androidAttestations: AndroidAttestationVerifier
    public let androidAssertions: AndroidAssertionVerifier
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

    public init(
        trust: TrustConfiguration, androidTrust: AndroidTrust = .google, clock: any Clock, timeBounds: TimeBounds = TimeBounds(),
        limits: VerifierLimits = VerifierLimits()
    ) {
        attestations = AttestationVerifier(trust: trust, limits: limits)
        assertions = AssertionVerifier(limits: limits)
        androidAttestations = AndroidAttestationVerifier(trust: androidTrust, limits: limits)
        androidAssertions = AndroidAssertionVerifier(limits: limits)
        self.clock = clock
        self.timeBounds = timeBounds
    }

    /// The verdict for a message that could not be read as a job, decided at `now` (the worker's batch reading;
    /// nil: the clock's).
    public func rejection(jobId: String?, _ failure: VerificationFailure, at now: Timestamp? = nil) -> Verdict {
        var verdict = Verdict(job: nil, verifiedAt: now ?? clock.now())
        verdict.jobId = jobId
        verdict.failure = failure
        return verdict
    }

    /// The verdict answering a value that is no job (``NotAJob``), under the members a scan read of it
    /// (nil: under a null jobId), so the worker's answer and the offline `verify`'s line are the same.
    public func rejection(answering fields: JobFieldScan?, _ failure: VerificationFailure, at now: Timestamp? = nil) -> Verdict {
        var verdict = rejection(jobId: fields?.jobId, failure, at: now)
        (verdict.teamId, verdict.bundleId, verdict.keyId) = (fields?.teamId, fields?.bundleId, fields?.keyId)
        return verdict
    }

    /// Checks the receivedAt bounds against `now` and, when the bound is configured and the message has one,
    /// the broker timestamp (milliseconds since 1970, as Kafka carries it); nil when the job may be verified.
    ///
    /// In 128-bit microseconds, so no configured bound or broker timestamp (9.3e15 ms included) overflows.
    /// A negative broker timestamp is Kafka's "none" (-1) or garbage: the broker check is skipped, as for
    /// a missing one.
    public func checkReceivedAt(_ job: Job, now: Timestamp, brokerTimestampMs: Int64? = nil) -> VerificationFailure? {
        checkReceivedAt(job.receivedAt, now: now, brokerTimestampMs: brokerTimestampMs)
    }

    /// The receivedAt bounds for a job of either platform.
    public func checkReceivedAt(_ receivedAt: Timestamp, now: Timestamp, brokerTimestampMs: Int64? = nil) -> VerificationFailure? {
        let received = Int128(receivedAt.microseconds)
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

    /// The checks before the challenge step: only a job passing them claims its worker-issued challenge.
    static let beforeChallenge: [any JobCheck] = [
        ReceivedAtCheck(),
        AppRegistrationCheck(),
    ]

    /// A job's checks in the contract's order (CONTRACT 7); size, JSON and fields came first, when the
    /// record was classified. The token is no check: it is signed onto an accepted verdict afterwards.
    static let checks: [any JobCheck] = beforeChallenge + [
        IssuedChallengeCheck(),
        AndroidStatusListCheck(),  // Android attestations: a status list the worker may still use
        ObjectCheck(),  // AttestVerifier's attestation or assertion checks, Apple's or Android's
        KeyRevocationCheck(),  // both: the operator's revocation of the key
        KeyEnvironmentCheck(),  // assertions: the environment policy
        QuotaCheck(),  // attestations: the monthly active device limit
    ]

    /// A job run through the checks: the verdict, and what passed them all.
    public struct Checked: Sendable {
        public var verdict: Verdict
        /// The verified object when every check passed, else nil.
        public var verified: VerifiedObject?
        /// Whether the job got past the app step, so the app's policy applies to what follows (its risk weights).
        public var passedApp: Bool
    }

    /// Runs the job's checks in order against `inputs`, the first failure deciding.
    public func check(_ job: Job, _ inputs: JobCheckInputs) -> Checked {
        var context = JobCheckContext(job: job, inputs: inputs, verifier: self, verdict: Verdict(job: job, verifiedAt: inputs.now))
        for check in Self.checks {
            if let failure = check.evaluate(&context) {
                context.verdict.failure = failure
                return Checked(verdict: context.verdict, verified: nil, passedApp: context.app != nil)
            }
        }
        return Checked(verdict: context.verdict, verified: context.verified, passedApp: true)
    }

    /// The list's last step, the quota (``QuotaCheck``), for a job whose other checks ran without one (its
    /// inputs' `quota` nil): the worker runs the object checks in parallel, then the quota in batch order, so
    /// a month's last slots go to the jobs consumed first. Of `inputs` the step reads only `quota`.
    public func checkQuota(_ checked: inout Checked, _ job: Job, _ inputs: JobCheckInputs) {
        guard checked.verified != nil else { return }
        var context = JobCheckContext(job: job, inputs: inputs, verifier: self, verdict: checked.verdict)
        context.verified = checked.verified
        guard let failure = QuotaCheck().evaluate(&context) else { return }
        context.verdict.failure = failure
        checked = Checked(verdict: context.verdict, verified: nil, passedApp: true)
    }

    /// Whether `job` passes the checks before the challenge step, so it may claim its challenge.
    public func reachesChallenge(_ job: Job, _ inputs: JobCheckInputs) -> Bool {
        var context = JobCheckContext(job: job, inputs: inputs, verifier: self, verdict: Verdict(job: job, verifiedAt: inputs.now))
        return Self.beforeChallenge.allSatisfy { $0.evaluate(&context) == nil }
    }
}
