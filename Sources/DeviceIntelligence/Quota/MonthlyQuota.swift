import AttestCore

/// An app's month as its quota sees it: the devices counted so far and when the count first reached the
/// limit (the start of the grace period).
public struct MonthlyQuota: Sendable, Equatable {
    public var devices = 0
    public var limitReachedAt: Timestamp?

    public init(devices: Int = 0, limitReachedAt: Timestamp? = nil) {
        self.devices = devices
        self.limitReachedAt = limitReachedAt
    }

    /// Whether a device not yet counted this month is turned away at `receivedAt`: the count has reached
    /// the limit and the grace period since it first did has passed.
    public func stopsNewDevices(at receivedAt: Timestamp, limit: Int, graceDays: Int) -> Bool {
        guard devices >= limit, let graceEnd = graceEnd(graceDays: graceDays) else { return false }
        return receivedAt >= graceEnd
    }

    /// When the grace period that began as the count first reached the limit ends; nil before it did.
    public func graceEnd(graceDays: Int) -> Timestamp? {
        // Any stored grace_days (an int4) is read: beyond a year it changes nothing in a monthly count, and
        // bounded so it cannot overflow the microseconds it becomes.
        limitReachedAt?.adding(seconds: Int64(min(max(graceDays, 0), 366)) * 86_400)
    }
}
