import AttestCore
import DeviceIntelligence
import Testing

/// The refreshed metric in the risk model (docs/device-intelligence.md): a high metric and a fast-growing
/// one each score, with per-app weights; a refresh replaces only the receipt factors of a held score; the
/// verdict carries the latest metric and its receipt's date.
@Suite struct ReceiptRiskTests {
    static let day: Int64 = 86_400
    static let t0 = Timestamp(microseconds: 1_796_000_000_000_000)

    @Test func growthBeyondItsAllowanceAddsItsWeightPerStepCapped() {
        var signals = RiskSignals()
        signals.receiptRiskMetricGrowth = 2
        #expect(RiskModel.assess(signals, policy: RiskPolicy()).factors.isEmpty)
        signals.receiptRiskMetricGrowth = 5
        let assessment = RiskModel.assess(signals, policy: RiskPolicy())
        #expect(assessment.factors == [RiskFactor(kind: .receiptRiskMetricGrowth, points: 15, value: .int(5))])
        signals.receiptRiskMetricGrowth = 100
        #expect(RiskModel.assess(signals, policy: RiskPolicy()).score == 20)
        let weighted = try! RiskPolicy(json: .object([("receipt_risk_metric_growth", .int(10))]))
        signals.receiptRiskMetricGrowth = 4
        #expect(RiskModel.assess(signals, policy: weighted).score == 20)
        #expect(weighted.json == .object([("receipt_risk_metric_growth", .int(10))]))
    }

    @Test func aHighMetricAndItsGrowthAddUp() {
        var signals = RiskSignals()
        signals.receiptRiskMetric = 9
        signals.receiptRiskMetricGrowth = 6
        let assessment = RiskModel.assess(signals, policy: RiskPolicy())
        #expect(assessment.factors.map(\.kind) == [.receiptRiskMetric, .receiptRiskMetricGrowth])
        #expect(assessment.score == 16 + 20 && assessment.category == .suspicious)
    }

    @Test func growthIsTheRiseOverTheRefreshBeforeWithinAWeek() {
        var history = DeviceHistory()
        history.refreshed(metric: 3, createdAt: Self.t0)
        #expect(history.receiptRiskMetric == 3 && history.receiptRiskMetricGrowth == nil && history.receiptRiskMetricAt == Self.t0)
        history.refreshed(metric: 9, createdAt: Self.t0.adding(seconds: Self.day))
        #expect(history.receiptRiskMetricGrowth == 6)
        // A fall is no rise.
        history.refreshed(metric: 4, createdAt: Self.t0.adding(seconds: 2 * Self.day))
        #expect(history.receiptRiskMetricGrowth == 0)
        // More than a week apart: no growth is known.
        history.refreshed(metric: 20, createdAt: Self.t0.adding(seconds: 9 * Self.day + 1))
        #expect(history.receiptRiskMetricGrowth == nil && history.receiptRiskMetric == 20)
        // A metric that did not come from a refreshed receipt (no date) gives no growth.
        var attested = DeviceHistory()
        attested.receiptRiskMetric = 2
        attested.refreshed(metric: 12, createdAt: Self.t0)
        #expect(attested.receiptRiskMetricGrowth == nil)
        // A receipt no newer than the held one changes nothing; times at the ends of the range do not trap.
        history.refreshed(metric: 25, createdAt: Self.t0)
        history.refreshed(metric: 26, createdAt: Self.t0.adding(seconds: 9 * Self.day + 1))
        #expect(history.receiptRiskMetric == 20 && history.receiptRiskMetricGrowth == nil)
        var far = DeviceHistory()
        far.refreshed(metric: 1, createdAt: Timestamp(microseconds: Int64.min))
        far.refreshed(metric: 30, createdAt: Timestamp(microseconds: Int64.max))
        #expect(far.receiptRiskMetricGrowth == nil)
        history.refreshed(metric: 23, createdAt: Self.t0.adding(seconds: 10 * Self.day))
        let signals = history.signals(at: Self.t0, extensions: nil)
        #expect(signals.receiptRiskMetric == 23 && signals.receiptRiskMetricGrowth == 3)
    }

    /// Built per use: LeakSanitizer reports a stored global of JSON values as leaked.
    static var held: HeldScore {
        HeldScore(
            score: 57,
            factors: .array([
                .object([("name", .string("counter_replay")), ("value", .int(1)), ("points", .int(15))]),
                .object([("name", .string("receipt_risk_metric")), ("points", .int(12)), ("value", .int(8))]),
                .object([("name", .string("bundle_version")), ("points", .int(20)), ("value", .string("1.0"))]),
                .object([("name", .string("receipt_risk_metric_growth")), ("points", .int(10)), ("value", .int(4))]),
            ]))
    }

    @Test func aRefreshReplacesOnlyTheReceiptFactorsOfTheHeldScore() throws {
        var signals = RiskSignals()
        signals.receiptRiskMetric = 7
        let rescored = try #require(RiskModel.rescoringReceipt(Self.held, signals, policy: RiskPolicy()))
        #expect(rescored.factors == [
            RiskFactor(kind: .counterReplay, points: 15, value: .int(1)),
            RiskFactor(kind: .receiptRiskMetric, points: 8, value: .int(7)),
            RiskFactor(kind: .bundleVersion, points: 20, value: .string("1.0")),
        ])
        #expect(rescored.score == 43)
        signals.receiptRiskMetric = 2
        #expect(RiskModel.rescoringReceipt(Self.held, signals, policy: RiskPolicy())?.score == 35)
        // The app's weights apply to the receipt factors.
        signals.receiptRiskMetric = 9
        let heavy = try RiskPolicy(json: .object([("receipt_risk_metric", .int(25))]))
        #expect(RiskModel.rescoringReceipt(Self.held, signals, policy: heavy)?.score == 100)
    }

    @Test func heldFactorsThatDoNotParseAreNotTrusted() {
        for factors: JSONValue in [
            .object([]), .array([.string("x")]),
            .array([.object([("name", .string("nonsense")), ("points", .int(1)), ("value", .int(1))])]),
            .array([.object([("name", .string("counter_replay")), ("points", .int(101)), ("value", .int(1))])]),
            .array([.object([("name", .string("counter_replay")), ("points", .int(5))])]),
        ] {
            #expect(RiskModel.rescoringReceipt(HeldScore(score: 5, factors: factors), RiskSignals(), policy: RiskPolicy()) == nil)
        }
    }

    @Test func theVerdictCarriesTheLatestRefreshedMetricAndItsDate() {
        var history = DeviceHistory()
        history.attestations = 1
        let assessment = RiskModel.assess(RiskSignals(), policy: RiskPolicy())
        let before = DeviceIntelligence(deviceId: "d", assessment: assessment, history: history).json
        guard case .object(let plain) = before else { Issue.record("not an object"); return }
        #expect(!plain.contains { $0.0 == "receiptRiskMetric" || $0.0 == "receiptRiskMetricDate" })
        history.refreshed(metric: 4, createdAt: Self.t0)
        guard case .object(let members) = DeviceIntelligence(deviceId: "d", assessment: assessment, history: history).json else {
            Issue.record("not an object")
            return
        }
        #expect(members.map { $0.0 }.suffix(3) == ["receiptRiskMetric", "receiptRiskMetricDate", "factors"])
        #expect(members.first { $0.0 == "receiptRiskMetric" }?.1 == .int(4))
        #expect(members.first { $0.0 == "receiptRiskMetricDate" }?.1 == .string(Self.t0.rfc3339))
    }
}
