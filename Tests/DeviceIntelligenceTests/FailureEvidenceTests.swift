import AttestCore
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import Testing

/// What counts against a device (docs/device-intelligence.md): only rejections the device's key or Apple's
/// chain vouch for, and those only within the failure window.
@Suite struct FailureEvidenceTests {
    /// Every reason, with whether it counts: a reason added to FailureReason without a row here fails
    /// `everyReasonIsClassified`, so it is classified on purpose, not by default.
    static let expected: [FailureReason: Bool] = [
        .malformedBase64: false, .malformedCBOR: false, .trailingData: false, .unsupportedFormat: false,
        .missingCertificates: false, .certificateChainInvalid: false, .certificateExpired: false, .nonceMismatch: false,
        .keyIdMismatch: false, .publicKeyMismatch: true, .rpIdMismatch: true, .counterNotZero: true, .aaguidInvalid: true,
        .environmentNotAllowed: true, .credentialIdMismatch: true, .receiptInvalid: false, .signatureInvalid: true,
        .counterNotIncreasing: true, .unknownKey: false, .challengeMismatch: false, .challengeUnknown: false,
        .challengeExpired: false, .challengeAlreadyUsed: false, .receivedAtOutOfRange: false, .tooLarge: false,
        .missingField: false, .invalidField: false, .unknownApp: false, .quotaExceeded: false, .jobIdReused: false,
        .unstorable: false, .challengeNotYetIssued: false, .receivedAtBrokerMismatch: false,
        .messageTooLarge: false, .malformedJSON: false, .keyRevoked: false, .statusListStale: false,
        .malformedCertificate: false, .untrustedRoot: false, .certificateRevoked: false, .keyDescriptionInvalid: false,
        .securityLevelInsufficient: true, .keyNotHardwareGenerated: true, .packageNameMismatch: true,
        .signingCertificateMismatch: true, .bootStateUnverified: true, .deviceUnlocked: true, .osOutdated: false,
        .unsupportedKeyAlgorithm: false,
    ]

    @Test func everyReasonIsClassified() {
        #expect(Set(Self.expected.keys) == Set(FailureReason.allCases))
        for reason in FailureReason.allCases {
            #expect(FailureEvidence.countsAgainstDevice(reason) == Self.expected[reason], "\(reason)")
        }
    }

    static func verdict(_ kind: Job.Kind, _ reason: FailureReason) -> Verdict {
        var verdict = Verdict(job: nil, verifiedAt: Timestamp(seconds: 0))
        verdict.kind = kind
        verdict.failure = VerificationFailure(.assertionInvalid, reason, "test")
        return verdict
    }

    @Test(arguments: FailureReason.allCases) func eventsFollowTheClassification(_ reason: FailureReason) {
        let attestation = DeviceEvent(Self.verdict(.attestation, reason), newKey: true)
        let assertion = DeviceEvent(Self.verdict(.assertion, reason), newKey: false)
        let counts = Self.expected[reason] == true
        #expect(attestation.failed == counts && attestation.failedAttestation == counts && !attestation.attested)
        #expect(assertion.failed == counts)
        #expect(assertion.counterReplay == (counts && reason == .counterNotIncreasing))
        #expect(assertion.failedAssertion == (counts && reason != .counterNotIncreasing))
        // A rejection that does not count leaves the history exactly as it was.
        var history = DeviceHistory()
        history.record(attestation, at: Timestamp(seconds: 1_777_000_000))
        history.record(assertion, at: Timestamp(seconds: 1_777_000_000))
        #expect((history == DeviceHistory()) == !counts)
    }

    static let start = Timestamp(seconds: 1_777_000_000)
    static let window = DeviceHistory.failureWindowSeconds

    static func failure(_ reason: FailureReason, _ kind: Job.Kind = .assertion) -> DeviceEvent {
        DeviceEvent(verdict(kind, reason), newKey: false)
    }

    @Test func failuresCountUntilTheWindowsEndAndNotAtIt() {
        var history = DeviceHistory()
        history.record(Self.failure(.counterNotIncreasing), at: Self.start)
        history.record(Self.failure(.signatureInvalid), at: Self.start.adding(seconds: 3600))
        history.record(Self.failure(.rpIdMismatch, .attestation), at: Self.start.adding(seconds: Self.window - 1))
        let lastMoment = Timestamp(microseconds: Self.start.adding(seconds: Self.window).microseconds - 1)
        let open = history.signals(at: lastMoment, extensions: nil)
        #expect(open.counterReplays == 1 && open.failedAssertions == 1 && open.failedAttestations == 1)
        let closed = history.signals(at: Self.start.adding(seconds: Self.window), extensions: nil)
        #expect(closed.counterReplays == 0 && closed.failedAssertions == 0 && closed.failedAttestations == 0)
        #expect(RiskModel.assess(closed, policy: RiskPolicy()).factors.isEmpty)
    }

    @Test func theFirstFailureAfterTheWindowOpensANewOne() {
        var history = DeviceHistory()
        for minute in 0..<6 { history.record(Self.failure(.counterNotIncreasing), at: Self.start.adding(seconds: Int64(minute) * 60)) }
        #expect(history.signals(at: Self.start, extensions: nil).counterReplays == 6)
        let next = Self.start.adding(seconds: Self.window)
        history.record(Self.failure(.signatureInvalid), at: next)
        #expect(history.failureWindowStart == next)
        let signals = history.signals(at: next, extensions: nil)
        #expect(signals.counterReplays == 0 && signals.failedAssertions == 1)
        // An event without a counted failure neither opens nor moves a window.
        var accepted = Verdict(job: nil, verifiedAt: Self.start)
        accepted.kind = .assertion
        history.record(DeviceEvent(accepted, newKey: false), at: next.adding(seconds: 2 * Self.window))
        #expect(history.failureWindowStart == next)
    }

    @Test func aJobReceivedBeforeTheWindowOpenedIsJudgedWithItAndAddsToIt() {
        var history = DeviceHistory()
        history.record(Self.failure(.counterNotIncreasing), at: Self.start)
        history.record(Self.failure(.counterNotIncreasing), at: Self.start.adding(seconds: -600))
        #expect(history.failureWindowStart == Self.start && history.counterReplays == 2)
        #expect(history.signals(at: Self.start.adding(seconds: -600), extensions: nil).counterReplays == 2)
    }

    /// The residual risk made concrete: forged bad signatures need only the keyId, and with the default
    /// weights any number of them in a window leave a clean device trusted.
    @Test func forgedBadSignaturesAloneLeaveACleanDeviceTrusted() {
        var history = DeviceHistory()
        var attested = Verdict(job: nil, verifiedAt: Self.start)
        attested.kind = .attestation
        attested.environment = .production
        history.record(DeviceEvent(attested, newKey: true), at: Self.start)
        for second in 0..<1000 { history.record(Self.failure(.signatureInvalid), at: Self.start.adding(seconds: Int64(second))) }
        let assessment = RiskModel.assess(history.signals(at: Self.start.adding(seconds: 1000), extensions: nil), policy: RiskPolicy())
        #expect(assessment.score == 20 && assessment.category == .trusted)
        #expect(assessment.factors == [RiskFactor(kind: .failedAssertion, points: 20, value: .int(1000))])
    }
}
