import AttestCore
import AttestVerifier

/// A device's risk history per app and identity (table `device_risk`): what the risk model needs beyond
/// the job at hand. `record` is the in-memory twin of the SQL upsert that applies an event as increments,
/// so concurrent workers add up exactly.
public struct DeviceHistory: Sendable, Equatable {
    /// The length of the attestation-rate window.
    public static let windowSeconds: Int64 = 86_400
    /// The length of the failure window: a failure stops counting at most this long after it was received,
    /// so a device poisoned with forged failures (or that failed once for real) is trusted again a day later.
    public static let failureWindowSeconds: Int64 = 86_400

    public var deviceId: String?
    public var attestations = 0
    public var lastAttestationAt: Timestamp?
    public var keys = 0
    /// The failures of the failure window (`failureWindowStart`): counted only while it is open.
    public var failedAttestations = 0
    public var failedAssertions = 0
    public var counterReplays = 0
    /// The failure window: it opens at a counted failure when no window is open and holds the failures of
    /// the next `failureWindowSeconds`; the next failure after it opens a new one.
    public var failureWindowStart: Timestamp?
    /// The attestation-rate window: it opens at an accepted attestation when no window is open and holds
    /// the attestations of the next 24 hours.
    public var windowStart: Timestamp?
    public var windowAttestations = 0
    public var receiptRiskMetric: Int?
    /// The creation time of the refreshed receipt that carried `receiptRiskMetric` (nil for a metric an
    /// attestation's receipt carried, or none).
    public var receiptRiskMetricAt: Timestamp?
    /// The metric's rise over the refreshed receipt before it (see `RiskSignals.receiptRiskMetricGrowth`).
    public var receiptRiskMetricGrowth: Int?
    public var environment: AppAttestEnvironment?

    public init() {}

    public mutating func record(_ event: DeviceEvent, at receivedAt: Timestamp) {
        if event.failed {
            if !failureWindowIsOpen(at: receivedAt) {
                failureWindowStart = receivedAt
                (failedAttestations, failedAssertions, counterReplays) = (0, 0, 0)
            }
            if event.failedAttestation { failedAttestations += 1 }
            if event.failedAssertion { failedAssertions += 1 }
            if event.counterReplay { counterReplays += 1 }
        }
        guard event.attested else { return }
        attestations += 1
        if event.newKey { keys += 1 }
        lastAttestationAt = max(lastAttestationAt ?? receivedAt, receivedAt)
        if let start = windowStart, receivedAt < start.adding(seconds: Self.windowSeconds) {
            windowAttestations += 1
        } else {
            windowStart = receivedAt
            windowAttestations = 1
        }
        environment = event.environment ?? environment
        receiptRiskMetric = event.receiptRiskMetric ?? receiptRiskMetric
    }

    /// The model's input at `receivedAt`, with the extensions the job's authenticator data carried.
    public func signals(at receivedAt: Timestamp, extensions: AppleExtensions?) -> RiskSignals {
        var signals = RiskSignals()
        signals.developmentBuild = environment == .development
        if failureWindowIsOpen(at: receivedAt) {
            signals.counterReplays = counterReplays
            signals.failedAttestations = failedAttestations
            signals.failedAssertions = failedAssertions
        }
        signals.keys = keys
        if let start = windowStart, receivedAt < start.adding(seconds: Self.windowSeconds) {
            signals.attestationsLast24Hours = windowAttestations
        }
        signals.receiptRiskMetric = receiptRiskMetric
        signals.receiptRiskMetricGrowth = receiptRiskMetricGrowth
        signals.validationCategory = extensions?.validationCategoryNumber
        if case .text(let version)? = extensions?.bundleVersion { signals.bundleVersion = version }
        return signals
    }

    /// A refreshed receipt's metric, created at `createdAt`: the growth is the rise over the metric held
    /// when that came from a refreshed receipt created within the growth window before this one. A receipt
    /// no newer than the held one changes nothing (the same receipt applied twice, or one delayed).
    public mutating func refreshed(metric: Int, createdAt: Timestamp) {
        if let previousAt = receiptRiskMetricAt, createdAt <= previousAt { return }
        if let previous = receiptRiskMetric, let previousAt = receiptRiskMetricAt,
            case let (gap, overflow) = createdAt.microseconds.subtractingReportingOverflow(previousAt.microseconds),
            !overflow, gap <= RiskModel.receiptGrowthWindowSeconds * 1_000_000
        {
            receiptRiskMetricGrowth = max(0, metric - previous)
        } else {
            receiptRiskMetricGrowth = nil
        }
        receiptRiskMetric = metric
        receiptRiskMetricAt = createdAt
    }

    /// Whether the failures held still count at `receivedAt`: until the window's end, exclusive (a job
    /// received before the window opened, admitted late, is judged with them).
    func failureWindowIsOpen(at receivedAt: Timestamp) -> Bool {
        guard let start = failureWindowStart else { return false }
        return receivedAt < start.adding(seconds: Self.failureWindowSeconds)
    }
}
