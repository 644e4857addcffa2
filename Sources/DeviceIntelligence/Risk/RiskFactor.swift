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
        case receiptRiskMetricGrowth = "receipt_risk_metric_growth"
        case validationCategory = "validation_category"
        case bundleVersion = "bundle_version"
        /// Android: what the secure hardware attested of the device (accepted where the app does not refuse it).
        case bootloaderUnlocked = "bootloader_unlocked"
        case bootUnverified = "boot_unverified"
        case noStrongBox = "no_strongbox"
        case stalePatchLevel = "stale_patch_level"
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

    /// The factor as a verdict or `device_risk.factors` holds it; nil when it is not one (an unknown name,
    /// points outside 0–100): the held score is then recomputed rather than trusted.
    public init?(json: JSONValue) {
        // Members by name: jsonb keeps its own key order.
        guard case .object(let members) = json, members.count == 3 else { return nil }
        let named = Dictionary(members, uniquingKeysWith: { first, _ in first })
        guard case .string(let name)? = named["name"], let kind = Kind(rawValue: name),
            case .int(let points)? = named["points"], (0...100).contains(points), let value = named["value"]
        else { return nil }
        self.init(kind: kind, points: Int(points), value: value)
    }

    public var json: JSONValue {
        .object([("name", .string(kind.rawValue)), ("points", .int(Int64(points))), ("value", value)])
    }
}
