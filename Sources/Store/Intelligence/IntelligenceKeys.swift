/// An app's device by identity: the key of `device_risk`.
public struct AppDevice: Hashable, Sendable {
    public var teamId: String
    public var bundleId: String
    public var identity: DeviceIdentity

    public init(teamId: String, bundleId: String, identity: DeviceIdentity) {
        self.teamId = teamId
        self.bundleId = bundleId
        self.identity = identity
    }
}

/// An app's UTC month ("YYYY-MM"): the key of `mad_totals` and of its quota.
public struct AppMonth: Hashable, Sendable {
    public var teamId: String
    public var bundleId: String
    public var month: String

    public init(teamId: String, bundleId: String, month: String) {
        self.teamId = teamId
        self.bundleId = bundleId
        self.month = month
    }
}

/// A device counted in an app's month: the key of `mad_devices`.
public struct MonthlyDevice: Hashable, Sendable {
    public var month: AppMonth
    public var identity: DeviceIdentity

    public init(month: AppMonth, identity: DeviceIdentity) {
        self.month = month
        self.identity = identity
    }
}
