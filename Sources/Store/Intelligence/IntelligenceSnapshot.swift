import AttestJobs
import DeviceIntelligence

/// What a batch reads before deciding: the histories of its devices, which of them are already counted
/// in their month, and the quota state of its apps' months.
public struct IntelligenceSnapshot: Sendable {
    public var histories: [AppDevice: DeviceHistory] = [:]
    /// What `device_risk` holds for the devices that have a row.
    public var scores: [AppDevice: HeldScore] = [:]
    public var counted: Set<MonthlyDevice> = []
    public var quotas: [AppMonth: MonthlyQuota] = [:]

    public init() {}
}

/// The rows a batch needs for its `IntelligenceSnapshot`.
public struct IntelligenceQuery: Sendable {
    public var devices: Set<AppDevice> = []
    public var counted: Set<MonthlyDevice> = []
    public var months: Set<AppMonth> = []

    public init() {}

    public var isEmpty: Bool { devices.isEmpty && months.isEmpty }
}
