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
    /// A rise of the metric up to this between two refreshes is normal (a reinstall, a restored backup).
    public static let receiptRiskMetricGrowthAllowance = 2
    /// Two refreshed metrics further apart than this say nothing about speed: no growth is scored.
    public static let receiptGrowthWindowSeconds: Int64 = 7 * 86_400
    /// An Android OS patch level up to this many months older than the job is current enough.
    public static let patchLevelAllowanceMonths = 12
    /// The factors a refreshed receipt decides; a refresh replaces only these in a held score.
    public static let receiptKinds: Set<RiskFactor.Kind> = [.receiptRiskMetric, .receiptRiskMetricGrowth]

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
        if let growth = signals.receiptRiskMetricGrowth {
            count(.receiptRiskMetricGrowth, growth, allowance: receiptRiskMetricGrowthAllowance)
        }
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
        if signals.bootloaderUnlocked { add(.bootloaderUnlocked, occurrences: 1, value: .bool(true)) }
        if let state = signals.bootState { add(.bootUnverified, occurrences: 1, value: .string(state)) }
        if signals.noStrongBox { add(.noStrongBox, occurrences: 1, value: .bool(true)) }
        if let level = signals.stalePatchLevel { add(.stalePatchLevel, occurrences: 1, value: .int(Int64(level))) }
        return RiskAssessment(score: min(100, factors.reduce(0) { $0 + $1.points }), factors: factors)
    }

    /// The held score with its receipt factors replaced by those of `signals` (a refreshed receipt, which
    /// arrives without a job): the other factors stay as the last job left them, so a refresh never drops
    /// what only a job's extensions show. Nil when the held factors do not parse; the factors keep the
    /// model's order.
    public static func rescoringReceipt(_ held: HeldScore, _ signals: RiskSignals, policy: RiskPolicy) -> RiskAssessment? {
        guard case .array(let items) = held.factors else { return nil }
        var factors = [RiskFactor]()
        for item in items {
            guard let factor = RiskFactor(json: item) else { return nil }
            if !receiptKinds.contains(factor.kind) { factors.append(factor) }
        }
        var receiptOnly = RiskSignals()
        receiptOnly.receiptRiskMetric = signals.receiptRiskMetric
        receiptOnly.receiptRiskMetricGrowth = signals.receiptRiskMetricGrowth
        factors += assess(receiptOnly, policy: policy).factors
        let order = Dictionary(uniqueKeysWithValues: RiskFactor.Kind.allCases.enumerated().map { ($1, $0) })
        factors.sort { order[$0.kind]! < order[$1.kind]! }
        return RiskAssessment(score: min(100, factors.reduce(0) { $0 + $1.points }), factors: factors)
    }
}
