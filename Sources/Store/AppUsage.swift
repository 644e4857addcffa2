import AttestCore
import AttestJobs
import DeviceIntelligence

/// What `GET /v1/apps/{app}/usage` answers: the app's monthly active devices this UTC month as the quota
/// counts them (the figures `attest-worker mad` and the quota step read), against its limit.
public struct AppUsage: Sendable, Equatable {
    public var app: AppIdentity
    /// "YYYY-MM", from the worker's clock.
    public var month: String
    public var devices: Int
    /// nil: the app has no limit.
    public var limit: Int?
    /// When new devices start being turned away; nil until the count first reached the limit this month.
    public var graceEndsAt: Timestamp?

    public init(app: AppIdentity, month: String, quota: MonthlyQuota, madLimit: Int?, graceDays: Int) {
        self.app = app
        self.month = month
        devices = quota.devices
        limit = madLimit
        graceEndsAt = madLimit == nil ? nil : quota.graceEnd(graceDays: graceDays)
    }

    /// Whole percent of the limit used, rounded down; nil without a limit, or with a limit of 0 (every new
    /// device is over it).
    public var percent: Int? {
        guard let limit, limit > 0 else { return nil }
        // Both come from int4 columns: the product fits 64 bits.
        return Int(Int64(devices) * 100 / Int64(limit))
    }

    /// Schemas/usage-response.schema.json.
    public var json: JSONValue {
        .object([
            ("teamId", .string(app.teamId)), ("bundleId", .string(app.bundleId)), ("month", .string(month)),
            ("devices", .int(Int64(devices))), ("limit", limit.map { .int(Int64($0)) } ?? .null),
            ("percent", percent.map { .int(Int64($0)) } ?? .null),
            ("graceEndsAt", graceEndsAt.map { .string($0.rfc3339) } ?? .null),
        ])
    }
}
