import AttestCore

/// A job's claim on a worker-issued challenge, settled with the rest of its batch in one round trip.
public struct ChallengeClaim: Sendable, Equatable {
    /// Recorded as the consumer, so a redelivery of the same job finds the challenge its own.
    public var jobId: String
    public var teamId: String
    public var bundleId: String
    /// The decoded challenge (either base64 alphabet, padding optional, as jobs may carry it).
    public var challenge: [UInt8]
    /// Expiry is measured at the job's receivedAt, never at the moment a worker picks it up.
    public var receivedAt: Timestamp
    /// How long after receivedAt a challenge may have been issued and still admit the job: the maximum
    /// future skew (ATTEST_MAX_FUTURE_SKEW), as far as the backend's clock, which stamps receivedAt, may run
    /// behind the database's, which stamps issue times. A challenge issued later did not exist when the job
    /// says it was received: the receivedAt is backdated (which would otherwise stretch a challenge's five
    /// minutes back by up to the maximum job age).
    public var skewSeconds: Int64

    public init(jobId: String, teamId: String, bundleId: String, challenge: [UInt8], receivedAt: Timestamp, skewSeconds: Int64) {
        self.jobId = jobId
        self.teamId = teamId
        self.bundleId = bundleId
        self.challenge = challenge
        self.receivedAt = receivedAt
        self.skewSeconds = skewSeconds
    }
}

/// How a claim was settled.
public enum ChallengeOutcome: String, Sendable, Equatable {
    /// The job holds the challenge now (or already did: a redelivery).
    case consumed
    /// Never issued, or issued for another app.
    case unknown
    /// Issued, but its lifetime had ended at the job's receivedAt.
    case expired
    /// Issued after the job's receivedAt (beyond the skew): the job is backdated. Not consumed.
    case notYetIssued = "not_yet_issued"
    /// Another job consumed it first.
    case alreadyUsed = "already_used"
}
