import AttestCore
import AttestVerifier

/// The verdict's `deviceIntelligence` (CONTRACT 2): the device's id, its risk score with the factors that
/// made it, and what its attestations showed.
public struct DeviceIntelligence: Sendable, Equatable {
    public var deviceId: String
    public var assessment: RiskAssessment
    public var history: DeviceHistory

    public init(deviceId: String, assessment: RiskAssessment, history: DeviceHistory) {
        self.deviceId = deviceId
        self.assessment = assessment
        self.history = history
    }

    /// unknown until a key of the device was attested; then high, medium or low with the risk category.
    public var deviceIntegrity: String {
        guard history.attestations > 0 else { return "unknown" }
        switch assessment.category {
        case .trusted: return "high"
        case .suspicious: return "medium"
        case .blocked: return "low"
        }
    }

    /// A development-signed build is treated like a jailbroken device: its key did not come from the store.
    public var jailbreakDetected: Bool { history.environment == .development }

    public var json: JSONValue {
        var members: [(String, JSONValue)] = [
            ("deviceId", .string(deviceId)), ("riskScore", .int(Int64(assessment.score))),
            ("riskCategory", .string(assessment.category.rawValue)), ("deviceIntegrity", .string(deviceIntegrity)),
            ("jailbreakDetected", .bool(jailbreakDetected)), ("attestationCount", .int(Int64(history.attestations))),
            ("lastAttestationDate", history.lastAttestationAt.map { .string($0.rfc3339) } ?? .null),
        ]
        // The latest refreshed receipt's metric and its creation time, once a refresh brought one.
        if let metric = history.receiptRiskMetric, let at = history.receiptRiskMetricAt {
            members += [("receiptRiskMetric", .int(Int64(metric))), ("receiptRiskMetricDate", .string(at.rfc3339))]
        }
        return .object(members + [("factors", assessment.factorsJSON)])
    }
}
