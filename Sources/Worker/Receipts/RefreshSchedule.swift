/// The intervals the refresh planner works with (docs/device-intelligence.md, "Receipt refresh"). Each is
/// in seconds; Apple's answers and hints are clamped into them, so no answer can schedule a device
/// sooner than `minimumSeconds` or later than `maximumSeconds`.
public struct RefreshSchedule: Sendable, Equatable {
    /// Devices whose last job is older than this are not refreshed (their metric serves no verdict).
    public var seenWithinSeconds: Int64
    /// After a 304.
    public var notModifiedSeconds: Int64
    /// After a 404: Apple's data comes back only with a new attestation.
    public var noDataSeconds: Int64
    /// How long a team whose key Apple refused is paused.
    public var misconfiguredPauseSeconds: Int64
    /// The backoff after the first failure, doubling per consecutive failure up to `backoffCapSeconds`.
    public var backoffInitialSeconds: Int64
    public var backoffCapSeconds: Int64
    /// The backoff after the first 200 whose receipt was rejected (forged, stale, expired, rolled back),
    /// doubling to the same cap: an answer that is wrong once is wrong the next minute too, and each try
    /// draws on the team's shared budget.
    public var rejectedBackoffInitialSeconds: Int64
    /// A refreshed receipt is due again this long before it expires when its not-before is later.
    public var expiryMarginSeconds: Int64
    /// Idle devices (not seen recently, revoked, unconfigured team) are looked at again after this.
    public var idleSeconds: Int64
    /// Bounds on any next due time, from now.
    public var minimumSeconds: Int64
    public var maximumSeconds: Int64

    public init(
        seenWithinSeconds: Int64 = 30 * 86_400, notModifiedSeconds: Int64 = 6 * 3600, noDataSeconds: Int64 = 86_400,
        misconfiguredPauseSeconds: Int64 = 3600, backoffInitialSeconds: Int64 = 60, backoffCapSeconds: Int64 = 6 * 3600,
        rejectedBackoffInitialSeconds: Int64 = 900,
        expiryMarginSeconds: Int64 = 86_400, idleSeconds: Int64 = 86_400, minimumSeconds: Int64 = 1,
        maximumSeconds: Int64 = 30 * 86_400
    ) {
        self.seenWithinSeconds = seenWithinSeconds
        self.notModifiedSeconds = notModifiedSeconds
        self.noDataSeconds = noDataSeconds
        self.misconfiguredPauseSeconds = misconfiguredPauseSeconds
        self.backoffInitialSeconds = backoffInitialSeconds
        self.backoffCapSeconds = backoffCapSeconds
        self.rejectedBackoffInitialSeconds = rejectedBackoffInitialSeconds
        self.expiryMarginSeconds = expiryMarginSeconds
        self.idleSeconds = idleSeconds
        self.minimumSeconds = minimumSeconds
        self.maximumSeconds = maximumSeconds
    }
}
