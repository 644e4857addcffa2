import AttestCore

/// Apple's rules for a receipt its attestation-data endpoint hands back ("Assessing fraud risk"): created
/// at most five minutes before the request ("to thwart replay attacks"), not in the future, not expired,
/// and never older than the receipt it replaces. A receipt that breaks one is a replay or a rollback,
/// whoever signed it, and is never stored. The checks run in this order; the first that fails is the
/// reason. A receipt carried in an attestation is not held to them: its creation time is reported, not
/// enforced (docs/CONTRACT.md).
public enum RefreshedReceiptFreshness {
    /// Apple's bound on a refreshed receipt's age.
    public static let maxAgeSeconds: Int64 = 300

    public enum Problem: String, Sendable, Equatable, CaseIterable {
        case createdInFuture = "creation time (field 12) is in the future"
        case stale = "creation time (field 12) is more than five minutes old"
        case expired = "expiration time (field 21) has passed"
        case olderThanStored = "created before the stored receipt (a rollback)"
    }

    /// The first rule `creation` and `expiry` break at `now`, or nil. `skewSeconds` is how far Apple's clock
    /// may run from the worker's (ATTEST_MAX_FUTURE_SKEW); `storedCreation` is the replaced receipt's
    /// creation time, when it has one. Wide arithmetic: no timestamp or skew can overflow a bound.
    public static func problem(
        creation: Timestamp, expiry: Timestamp?, storedCreation: Timestamp?, now: Timestamp, skewSeconds: Int64
    ) -> Problem? {
        let now = Int128(now.microseconds)
        let skew = Int128(max(skewSeconds, 0)) * 1_000_000
        let created = Int128(creation.microseconds)
        let checks: [(Problem, Bool)] = [
            (.createdInFuture, created > now + skew),
            (.stale, created < now - Int128(maxAgeSeconds) * 1_000_000 - skew),
            (.expired, expiry.map { Int128($0.microseconds) <= now } ?? false),
            (.olderThanStored, storedCreation.map { created < Int128($0.microseconds) } ?? false),
        ]
        return checks.first { $0.1 }?.0
    }
}
