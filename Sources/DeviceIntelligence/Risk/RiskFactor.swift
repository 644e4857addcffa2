import AttestCore

/// One reason a device's risk score is above zero: which signal, how many points it added, and the value
/// observed, so a score can always be explained (docs/device-intelligence.md).
public struct RiskFactor: Sendable, Equatable {
    /// The signals the model weighs; the raw values are the names in verdicts and in `--risk-weights`.
    public enum Kind: String, Sendable, CaseIterable {
        case developmentBuild = "development_build"
        case counterReplay = "counter_replay"
        case failedAttestation = "failed_attestation"
        case failedAssertion = "failed_assertion"
        case keyChurn = "key_churn"
        case attestationRate = "attestation_rate"
        case receiptRiskMetric = "receipt_risk_metric"
        case validationCategory = "validation_category"
        case bundleVersion = "bundle_version"
    }

    public var kind: Kind
    public var points: Int
    /// What was observed: a count, the receipt's metric, the category or the bundle version.
    public var value: JSONValue

    public init(kind: Kind, points: Int, value: JSONValue) {
        self.kind = kind
        self.points = points
        self.value = value
    }

    public var json: JSONValue {
        .object([("name", .string(kind.rawValue)), ("points", .int(Int64(points))), ("value", value)])
    }
}
