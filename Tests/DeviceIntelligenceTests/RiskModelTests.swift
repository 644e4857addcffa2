import AttestCore
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import Testing

/// The risk model as docs/device-intelligence.md documents it: each factor adds its weight per occurrence
/// beyond its allowance (at most four times), the sum is capped at 100, and a clean device scores 0.
@Suite struct RiskModelTests {
    /// A device with one key, attested once today, nothing else known.
    static var clean: RiskSignals {
        var signals = RiskSignals()
        signals.keys = 1
        signals.attestationsLast24Hours = 1
        return signals
    }

    static func assess(_ change: (inout RiskSignals) -> Void, policy: RiskPolicy = RiskPolicy()) -> RiskAssessment {
        var signals = clean
        change(&signals)
        return RiskModel.assess(signals, policy: policy)
    }

    @Test func aCleanDeviceScoresZeroAndIsTrusted() {
        let assessment = RiskModel.assess(Self.clean, policy: RiskPolicy())
        #expect(assessment.score == 0 && assessment.factors.isEmpty && assessment.category == .trusted)
        var quiet = Self.clean
        quiet.receiptRiskMetric = 5
        quiet.attestationsLast24Hours = 3
        quiet.validationCategory = 1
        quiet.bundleVersion = "1"
        #expect(RiskModel.assess(quiet, policy: RiskPolicy()).score == 0)
    }

    static let policy = RiskPolicy(allowedValidationCategories: [1], minimumBundleVersion: "1.10")
    static let cases: [(RiskFactor.Kind, @Sendable (inout RiskSignals) -> Void, Int)] = [
        (.developmentBuild, { $0.developmentBuild = true }, 25),
        (.counterReplay, { $0.counterReplays = 2 }, 30),
        (.failedAttestation, { $0.failedAttestations = 1 }, 10),
        (.failedAssertion, { $0.failedAssertions = 3 }, 15),
        (.keyChurn, { $0.keys = 3 }, 20),
        (.attestationRate, { $0.attestationsLast24Hours = 5 }, 10),
        (.receiptRiskMetric, { $0.receiptRiskMetric = 8 }, 12),
        (.validationCategory, { $0.validationCategory = 2 }, 30),
        (.bundleVersion, { $0.bundleVersion = "1.9" }, 20),
    ]

    @Test(arguments: 0..<9) func eachFactorAddsItsDocumentedPoints(_ index: Int) {
        let (kind, change, points) = Self.cases[index]
        let assessment = Self.assess(change, policy: Self.policy)
        #expect(assessment.factors.map(\.kind) == [kind])
        #expect(assessment.score == points)
        #expect(assessment.category == RiskCategory(score: points))
        // A weight of zero turns the factor off.
        let off = try! RiskPolicy(json: .object([(kind.rawValue, .int(0))]))
        #expect(Self.assess(change, policy: RiskPolicy(weights: off.weights, allowedValidationCategories: [1], minimumBundleVersion: "1.10")).score == 0)
    }

    @Test func occurrencesAreCappedAndTheScoreAtOneHundred() {
        #expect(Self.assess { $0.counterReplays = 10 }.score == 60)
        let worst = Self.assess {
            $0.developmentBuild = true
            $0.counterReplays = 4
            $0.failedAttestations = 4
        }
        #expect(worst.score == 100 && worst.category == .blocked)
        #expect(worst.factors.reduce(0) { $0 + $1.points } == 125)
    }

    @Test func extensionsAreJudgedOnlyAgainstAPolicy() {
        #expect(Self.assess { $0.validationCategory = 7 }.score == 0)
        #expect(Self.assess { $0.bundleVersion = "0.1" }.score == 0)
        #expect(Self.assess({ $0.bundleVersion = "1.10.0" }, policy: Self.policy).score == 0)
    }

    @Test func categoriesFollowTheScore() {
        #expect([0, 20, 21, 75, 76, 100].map { RiskCategory(score: $0) } == [.trusted, .trusted, .suspicious, .suspicious, .blocked, .blocked])
    }

    @Test func bundleVersionsCompareNumerically() {
        #expect(BundleVersion.isBelow("1.9", "1.10"))
        #expect(!BundleVersion.isBelow("1.10", "1.9"))
        #expect(!BundleVersion.isBelow("1", "1.0"))
        #expect(BundleVersion.isBelow("1.0-beta", "1.0-rc"))
    }

    @Test func policiesRoundTripThroughJSONAndRejectUnknownSettings() throws {
        let json = JSONValue.parse(Array(#"{"counter_replay":20,"allowed_validation_categories":[2,1],"minimum_bundle_version":"3"}"#.utf8))!
        let policy = try RiskPolicy(json: json)
        #expect(policy.weight(.counterReplay) == 20 && policy.weight(.developmentBuild) == 25)
        #expect(try RiskPolicy(json: policy.json) == policy)
        #expect(RiskPolicy().json == .object([]))
        #expect(throws: RiskPolicy.Invalid.self) { try RiskPolicy(json: .object([("counter_replays", .int(1))])) }
        #expect(throws: RiskPolicy.Invalid.self) { try RiskPolicy(json: .object([("counter_replay", .int(101))])) }
    }

    @Test func theAttestationRateWindowLastsTwentyFourHours() {
        var history = DeviceHistory()
        var event = DeviceEvent(Verdict(job: nil, verifiedAt: Timestamp(seconds: 0)), newKey: true)
        event.attested = true
        event.newKey = true
        let start = Timestamp(seconds: 1_777_000_000)
        for hour in [0, 1, 2, 3, 23] { history.record(event, at: start.adding(seconds: Int64(hour) * 3600)) }
        #expect(history.signals(at: start.adding(seconds: 23 * 3600), extensions: nil).attestationsLast24Hours == 5)
        #expect(history.signals(at: start.adding(seconds: 24 * 3600), extensions: nil).attestationsLast24Hours == 0)
        history.record(event, at: start.adding(seconds: 25 * 3600))
        #expect(history.windowAttestations == 1 && history.attestations == 6 && history.keys == 6)
    }

    @Test func eventsCountOnlyWhatConcernsTheDevice() {
        var verdict = Verdict(job: nil, verifiedAt: Timestamp(seconds: 0))
        verdict.kind = .assertion
        let nothing = DeviceEvent(verdict, newKey: false)
        verdict.failure = VerificationFailure(.assertionInvalid, .counterNotIncreasing, "replay")
        #expect(DeviceEvent(verdict, newKey: false).counterReplay)
        verdict.failure = VerificationFailure(.assertionInvalid, .signatureInvalid, "bad")
        #expect(DeviceEvent(verdict, newKey: false).failedAssertion)
        verdict.kind = .attestation
        verdict.failure = VerificationFailure(.quotaExceeded, .quotaExceeded, "limit")
        #expect(DeviceEvent(verdict, newKey: true) == nothing)
        verdict.failure = VerificationFailure(.jobInvalid, .receivedAtOutOfRange, "late")
        #expect(DeviceEvent(verdict, newKey: true) == nothing)
        // A chain that is not Apple's is anyone's: it says nothing of the device whose keyId it carries.
        verdict.failure = VerificationFailure(.appleValidationFailed, .certificateChainInvalid, "chain")
        #expect(DeviceEvent(verdict, newKey: true) == nothing)
        verdict.failure = VerificationFailure(.appleValidationFailed, .rpIdMismatch, "another app")
        #expect(DeviceEvent(verdict, newKey: true).failedAttestation)
    }
}
