import AttestCore
import AttestVerifier

/// What Android attestations are checked against: the status list the worker holds, while it is younger
/// than ATTEST_ANDROID_STATUS_LIST_MAX_AGE; past that (or before any list was loaded), per
/// ATTEST_ANDROID_STATUS_LIST_STALE, refused `status_list_stale` (the default: a fraud check that cannot tell
/// a revoked chain from a valid one says so) or checked against the last list, the age metric and its
/// alert warning the operator.
public struct AndroidStatusGate: Sendable {
    public enum WhenStale: String, Sendable, CaseIterable {
        case refuse
        case warn
    }

    public let lists: AndroidStatusLists
    public let maxAgeSeconds: Int64
    public let whenStale: WhenStale

    public init(lists: AndroidStatusLists, maxAgeSeconds: Int64, whenStale: WhenStale) {
        self.lists = lists
        self.maxAgeSeconds = maxAgeSeconds
        self.whenStale = whenStale
    }

    /// The list to check with at `now`, or the refusal of a stale one.
    func input(at now: Timestamp) -> Result<AndroidStatusList?, VerificationFailure> {
        let held = lists.current
        if let held, Int128(now.microseconds) - Int128(held.fetchedAt.microseconds) <= Int128(maxAgeSeconds) * 1_000_000 {
            return .success(held.list)
        }
        if whenStale == .warn { return .success(held?.list) }
        let why = held.map { "the Android status list is older than \(maxAgeSeconds) s (fetched \($0.fetchedAt.rfc3339))" }
            ?? "no Android status list has been loaded yet"
        return .failure(VerificationFailure(.androidValidationFailed, .statusListStale, why))
    }
}
