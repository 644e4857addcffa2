import AttestCore
import AttestVerifier

/// A device's risk history per app and identity (table `device_risk`): what the risk model needs beyond
/// the job at hand. `record` is the in-memory twin of the SQL upsert that applies an event as increments,
/// so concurrent workers add up exactly.
public struct DeviceHistory: Sendable, Equatable {
    /// The length of the attestation-rate window.
    public static let windowSeconds: Int64 = 86_400

    public var deviceId: String?
    public var attestations = 0
    public var lastAttestationAt: Timestamp?
    public var keys = 0
    public var failedAttestations = 0
    public var failedAssertions = 0
    public var counterReplays = 0
    /// The attestation-rate window: it opens at an accepted attestation when no window is open and holds
    /// the attestations of the next 24 hours.
    public var windowStart: Timestamp?
    public var windowAttestations = 0
    public var receiptRiskMetric: Int?
    public var environment: AppAttestEnvironment?

    public init() {}

    public mutating func record(_ event: DeviceEvent, at receivedAt: Timestamp) {
        if event.failedAttestation { failedAttestations += 1 }
        if event.failedAssertion { failedAssertions += 1 }
        if event.counterReplay { counterReplays += 1 }
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
        signals.counterReplays = counterReplays
        signals.failedAttestations = failedAttestations
        signals.failedAssertions = failedAssertions
        signals.keys = keys
        if let start = windowStart, receivedAt < start.adding(seconds: Self.windowSeconds) {
            signals.attestationsLast24Hours = windowAttestations
        }
        signals.receiptRiskMetric = receiptRiskMetric
        signals.validationCategory = extensions?.validationCategoryNumber
        if case .text(let version)? = extensions?.bundleVersion { signals.bundleVersion = version }
        return signals
    }
}
