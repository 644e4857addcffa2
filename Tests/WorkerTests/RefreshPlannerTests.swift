import AppleReceipts
import AttestCore
import Testing
@testable import Store
@testable import Worker

/// The refresh planner's rules (docs/device-intelligence.md, "Receipt refresh"): when a leased device is
/// sent to Apple at all, and when each of Apple's answers makes it due again.
@Suite struct RefreshPlannerTests {
    static let now = Timestamp(microseconds: 1_796_000_000_000_000)
    static let schedule = RefreshSchedule()

    static func device(seen: Timestamp = now, revoked: Bool = false, receipt: [UInt8]? = [1], attempts: Int = 0) -> ClaimedRefresh {
        ClaimedRefresh(
            keyId: [UInt8](repeating: 7, count: 32), attempts: attempts, teamId: "TEAM", bundleId: "app", environment: "production",
            receipt: receipt, publicKey: [4] + [UInt8](repeating: 1, count: 64), deviceId: "d", fingerprint: nil, lastSeenAt: seen,
            revoked: revoked)
    }

    static func before(_ device: ClaimedRefresh, notBefore: Timestamp? = nil, configured: Bool = true, forced: Bool = false)
        -> RefreshPlanner.Step
    {
        RefreshPlanner.before(device, storedNotBefore: notBefore, configured: configured, now: now, schedule: schedule, forced: forced)
    }

    static func after(_ outcome: ReceiptRefreshOutcome, attempts: Int = 0) -> NextRefresh {
        RefreshPlanner.after(outcome, attempts: attempts, now: now, schedule: schedule)
    }

    // MARK: before asking

    @Test func aRecentlySeenDeviceWhoseReceiptIsPastItsNotBeforeIsSent() {
        #expect(Self.before(Self.device()) == .call)
        #expect(Self.before(Self.device(), notBefore: Self.now) == .call)
        #expect(Self.before(Self.device(seen: Self.now.adding(seconds: -Self.schedule.seenWithinSeconds))) == .call)
    }

    @Test func aDeviceNotSeenWithinTheWindowIsIdleForADayUnlessForced() {
        let stale = Self.device(seen: Self.now.adding(seconds: -Self.schedule.seenWithinSeconds - 1), attempts: 3)
        #expect(Self.before(stale) == .settle(.init(dueAt: Self.now.adding(seconds: 86_400), attempts: 3, status: .idle)))
        #expect(Self.before(stale, forced: true) == .call)
    }

    @Test func revokedGoneOrReceiptlessDevicesAreNeverSent() {
        let idle = RefreshPlanner.Step.settle(.init(dueAt: Self.now.adding(seconds: 86_400), attempts: 0, status: .idle))
        #expect(Self.before(Self.device(revoked: true), forced: true) == idle)
        #expect(Self.before(Self.device(receipt: nil), forced: true) == idle)
        var gone = Self.device()
        (gone.teamId, gone.bundleId, gone.publicKey, gone.lastSeenAt) = (nil, nil, nil, nil)
        #expect(Self.before(gone, forced: true) == idle)
    }

    @Test func aTeamWithoutAKeyIsNotSent() {
        #expect(
            Self.before(Self.device(), configured: false, forced: true)
                == .settle(.init(dueAt: Self.now.adding(seconds: 86_400), attempts: 0, status: .unconfigured)))
    }

    @Test func beforeItsNotBeforeTheDeviceWaitsForIt() {
        let notBefore = Self.now.adding(seconds: 3600)
        #expect(Self.before(Self.device(), notBefore: notBefore) == .settle(.init(dueAt: notBefore, attempts: 0, status: .waiting)))
        // A not-before beyond the schedule's bound waits only as long as the bound.
        let far = Self.now.adding(seconds: 400 * 86_400)
        #expect(
            Self.before(Self.device(), notBefore: far)
                == .settle(.init(dueAt: Self.now.adding(seconds: Self.schedule.maximumSeconds), attempts: 0, status: .waiting)))
        #expect(Self.before(Self.device(), notBefore: notBefore, forced: true) == .call)
    }

    // MARK: after Apple's answer

    static func receipt(notBefore: Timestamp?, expiry: Timestamp?) -> RefreshedReceipt {
        RefreshedReceipt(der: [1], riskMetric: 3, creationTime: now, notBefore: notBefore, expirationTime: expiry)
    }

    @Test func aRefreshedReceiptIsDueAtItsNotBeforeOrBeforeItExpires() {
        let notBefore = Self.now.adding(seconds: 86_400)
        let expiry = Self.now.adding(seconds: 90 * 86_400)
        #expect(
            Self.after(.refreshed(Self.receipt(notBefore: notBefore, expiry: expiry)), attempts: 5)
                == .init(dueAt: notBefore, attempts: 0, status: .refreshed))
        // An expiry closer than its margin after the not-before: due the margin before the expiry.
        let soon = Self.now.adding(seconds: 86_400 + 3600)
        #expect(Self.after(.refreshed(Self.receipt(notBefore: notBefore, expiry: soon))).dueAt == Self.now.adding(seconds: 3600))
        // Neither field: the 304 interval; a not-before or expiry margin already past is no schedule: the
        // other one when ahead, else the 304 interval, never due at once.
        #expect(Self.after(.refreshed(Self.receipt(notBefore: nil, expiry: nil))).dueAt == Self.now.adding(seconds: 6 * 3600))
        let past = Self.now.adding(seconds: -100)
        #expect(Self.after(.refreshed(Self.receipt(notBefore: past, expiry: nil))).dueAt == Self.now.adding(seconds: 6 * 3600))
        #expect(Self.after(.refreshed(Self.receipt(notBefore: past, expiry: Self.now.adding(seconds: -10 * 86_400)))).dueAt
            == Self.now.adding(seconds: 6 * 3600))
        #expect(Self.after(.refreshed(Self.receipt(notBefore: past, expiry: soon))).dueAt == Self.now.adding(seconds: 3600))
        #expect(Self.after(.refreshed(Self.receipt(notBefore: Self.now, expiry: nil))).dueAt == Self.now.adding(seconds: 6 * 3600))
        // An expiry at the far end of time does not overflow (it is then as good as none).
        let end = Timestamp(microseconds: Int64.min + 10)
        #expect(Self.after(.refreshed(Self.receipt(notBefore: nil, expiry: end))).dueAt == Self.now.adding(seconds: 6 * 3600))
    }

    @Test func notModifiedAndNoDataKeepTheReceiptAndWaitLongerForNoData() {
        #expect(Self.after(.notModified, attempts: 2) == .init(dueAt: Self.now.adding(seconds: 6 * 3600), attempts: 0, status: .notModified))
        #expect(Self.after(.noData, attempts: 2) == .init(dueAt: Self.now.adding(seconds: 86_400), attempts: 0, status: .noData))
    }

    @Test func retryLaterBacksOffExponentiallyCappedAndHonoursRetryAfter() {
        let waits = (0..<12).map { Self.after(.retryLater(retryAfter: nil, reason: "500"), attempts: $0).dueAt.microseconds - Self.now.microseconds }
        #expect(waits.map { $0 / 1_000_000 } == [60, 120, 240, 480, 960, 1920, 3840, 7680, 15360, 21600, 21600, 21600])
        #expect(Self.after(.retryLater(retryAfter: nil, reason: "500"), attempts: 3).attempts == 4)
        #expect(Self.after(.retryLater(retryAfter: nil, reason: "500"), attempts: 10_000).attempts == RefreshPlanner.maxAttempts)
        // Retry-After longer than the backoff wins; shorter does not shorten it; fractions round up.
        #expect(Self.after(.retryLater(retryAfter: .seconds(300), reason: "429"), attempts: 0).dueAt == Self.now.adding(seconds: 300))
        #expect(Self.after(.retryLater(retryAfter: .seconds(5), reason: "429"), attempts: 1).dueAt == Self.now.adding(seconds: 120))
        #expect(Self.after(.retryLater(retryAfter: .milliseconds(60_500), reason: "429"), attempts: 0).dueAt == Self.now.adding(seconds: 61))
        // A hostile Retry-After is bounded by the schedule; a negative one is none.
        #expect(
            Self.after(.retryLater(retryAfter: .seconds(Int64.max), reason: "429")).dueAt
                == Self.now.adding(seconds: Self.schedule.maximumSeconds))
        #expect(Self.after(.retryLater(retryAfter: .seconds(-50), reason: "429")).dueAt == Self.now.adding(seconds: 60))
        #expect(Self.after(.retryLater(retryAfter: nil, reason: "timeout")).error == "timeout")
    }

    @Test func misconfiguredPausesTheTeamWithoutCountingAnAttempt() {
        let next = Self.after(.misconfigured(status: 401, reason: "key refused"), attempts: 2)
        let until = Self.now.adding(seconds: 3600)
        #expect(next == .init(dueAt: until, attempts: 2, status: .misconfigured, error: "401: key refused", pauseTeam: (until, 401)))
    }

    @Test func aRejectedReceiptIsRetriedWithItsLongerBackoff() {
        #expect(
            Self.after(.rejected(reason: "signer"), attempts: 1)
                == .init(dueAt: Self.now.adding(seconds: 1800), attempts: 2, status: .rejected, error: "signer"))
        // A device whose answers are always bad: a handful of requests in its first hour, fewer after.
        var (attempts, at, requests) = (0, Int64(0), [Int64]())
        while at < 6 * 3600 {
            requests.append(at)
            let next = Self.after(.rejected(reason: "stale"), attempts: attempts)
            at += next.dueAt.microseconds / 1_000_000 - Self.now.microseconds / 1_000_000
            attempts = next.attempts
        }
        #expect(requests.filter { $0 < 3600 }.count == 3)
        #expect(requests.count == 5, "\(requests)")
    }

    @Test func aSpentTeamBudgetWaitsForItsTokenAndIsNoAttempt() {
        #expect(
            RefreshPlanner.rateLimited(retryAfterSeconds: 7, attempts: 3, now: Self.now, schedule: Self.schedule)
                == .init(dueAt: Self.now.adding(seconds: 7), attempts: 3, status: .rateLimited))
    }

    @Test func storedErrorsAreBoundedAtACharacter() {
        let long = String(repeating: "é", count: 400)
        let cut = NextRefresh.bounded(long)
        #expect(cut.utf8.count == 512 && cut.allSatisfy { $0 == "é" })
    }
}
