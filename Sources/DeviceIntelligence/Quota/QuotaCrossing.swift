/// An app's month crossing 80% or 100% of its MAD limit, recorded once (table `mad_quota_events`) and
/// reported to operators as a log line and a metric.
public struct QuotaCrossing: Sendable, Equatable {
    public var teamId: String
    public var bundleId: String
    public var month: String
    /// 80 or 100 (percent of the limit).
    public var threshold: Int
    public var devices: Int
    public var limit: Int

    public init(teamId: String, bundleId: String, month: String, threshold: Int, devices: Int, limit: Int) {
        self.teamId = teamId
        self.bundleId = bundleId
        self.month = month
        self.threshold = threshold
        self.devices = devices
        self.limit = limit
    }
}
