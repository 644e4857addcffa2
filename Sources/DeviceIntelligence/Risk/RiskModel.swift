import AttestCore

/// The deterministic risk score (docs/device-intelligence.md): each factor adds its weight once, or per
/// occurrence beyond a free allowance for counted factors, at most `maxOccurrences` times; the sum is
/// capped at 100. Pure, so the worker and the offline verifier score alike and tests pin every factor.
public enum RiskModel {
    /// Occurrences beyond this add nothing more: one factor alone cannot outweigh the rest unbounded.
    public static let maxOccurrences = 4
    /// Attestations per 24 hours that are normal (reinstalls, a new device).
    public static let attestationRateAllowance = 3
    /// Receipt risk metrics up to this are normal (Apple counts the device's recent attestations).
    public static let receiptRiskMetricAllowance = 5

    public static func assess(_ signals: RiskSignals, policy: RiskPolicy) -> RiskAssessment {
        var factors = [RiskFactor]()
        func add(_ kind: RiskFactor.Kind, occurrences: Int, value: JSONValue) {
            let points = policy.weight(kind) * min(occurrences, maxOccurrences)
            if points > 0 { factors.append(RiskFactor(kind: kind, points: points, value: value)) }
        }
        func count(_ kind: RiskFactor.Kind, _ n: Int, allowance: Int = 0) {
            add(kind, occurrences: max(0, n - allowance), value: .int(Int64(n)))
        }
        if signals.developmentBuild { add(.developmentBuild, occurrences: 1, value: .bool(true)) }
        count(.counterReplay, signals.counterReplays)
        count(.failedAttestation, signals.failedAttestations)
        count(.failedAssertion, signals.failedAssertions)
        count(.keyChurn, signals.keys, allowance: 1)
        count(.attestationRate, signals.attestationsLast24Hours, allowance: attestationRateAllowance)
        if let metric = signals.receiptRiskMetric { count(.receiptRiskMetric, metric, allowance: receiptRiskMetricAllowance) }
        if let category = signals.validationCategory, let allowed = policy.allowedValidationCategories,
            !allowed.contains(category)
        {
            add(.validationCategory, occurrences: 1, value: .int(Int64(category)))
        }
        if let version = signals.bundleVersion, let minimum = policy.minimumBundleVersion,
            BundleVersion.isBelow(version, minimum)
        {
            add(.bundleVersion, occurrences: 1, value: .string(version))
        }
        return RiskAssessment(score: min(100, factors.reduce(0) { $0 + $1.points }), factors: factors)
    }
}
