import AppleReceipts
import AttestCore
import Store

/// The refresh scheduler's decisions, as a pure function of what is known and the clock's now: whether to
/// ask Apple for a leased device at all, and, from Apple's answer, when the device is next due and what its
/// state says. The service only carries them out, so every rule is pinned by a unit test.
public enum RefreshPlanner {
    public enum Step: Sendable, Equatable {
        /// Ask Apple.
        case call
        /// Do not: settle the device as this.
        case settle(NextRefresh)
    }

    /// Beyond this many consecutive failures the backoff is at its cap anyway; the count stops growing.
    static let maxAttempts = 32

    /// Whether a leased device is worth a request now: `storedNotBefore` is its stored receipt's
    /// (``ClaimedRefresh/storedNotBefore``). `forced` (`attest-worker receipt refresh`) asks whenever a
    /// request can be made at all: seen long ago or before the receipt's not-before.
    public static func before(
        _ device: ClaimedRefresh, storedNotBefore: Timestamp?, configured: Bool, now: Timestamp, schedule: RefreshSchedule,
        forced: Bool = false
    ) -> Step {
        let idle = NextRefresh(dueAt: later(now, schedule.idleSeconds, schedule), attempts: device.attempts, status: .idle)
        guard device.teamId != nil, device.receipt != nil, device.publicKey != nil, !device.revoked, let seen = device.lastSeenAt
        else { return .settle(idle) }
        if !forced, seen < now.adding(seconds: -schedule.seenWithinSeconds) { return .settle(idle) }
        if !configured { return .settle(NextRefresh(dueAt: idle.dueAt, attempts: device.attempts, status: .unconfigured)) }
        if !forced, let notBefore = storedNotBefore, notBefore > now {
            return .settle(NextRefresh(dueAt: clamp(notBefore, now: now, schedule), attempts: device.attempts, status: .waiting))
        }
        return .call
    }

    /// The state after Apple's answer, for a device with `attempts` consecutive failures before it.
    public static func after(
        _ outcome: ReceiptRefreshOutcome, attempts: Int, now: Timestamp, schedule: RefreshSchedule
    ) -> NextRefresh {
        switch outcome {
        case .refreshed(let receipt):
            return NextRefresh(dueAt: dueAfterRefresh(receipt, now: now, schedule), attempts: 0, status: .refreshed)
        case .notModified:
            return NextRefresh(dueAt: later(now, schedule.notModifiedSeconds, schedule), attempts: 0, status: .notModified)
        case .noData:
            return NextRefresh(dueAt: later(now, schedule.noDataSeconds, schedule), attempts: 0, status: .noData)
        case .retryLater(let retryAfter, let reason):
            let wait = max(backoff(attempts: attempts, schedule), retryAfter.map(seconds) ?? 0)
            return NextRefresh(dueAt: later(now, wait, schedule), attempts: min(attempts + 1, maxAttempts), status: .retryLater, error: reason)
        case .misconfigured(let status, let reason):
            let until = later(now, schedule.misconfiguredPauseSeconds, schedule)
            return NextRefresh(dueAt: until, attempts: attempts, status: .misconfigured, error: "\(status): \(reason)", pauseTeam: (until, status))
        case .rejected(let reason):
            return NextRefresh(
                dueAt: later(now, backoff(attempts: attempts, from: schedule.rejectedBackoffInitialSeconds, schedule), schedule),
                attempts: min(attempts + 1, maxAttempts), status: .rejected, error: reason)
        }
    }

    /// The team's request budget was spent: due again when its bucket has a token, not an attempt.
    public static func rateLimited(retryAfterSeconds: Int, attempts: Int, now: Timestamp, schedule: RefreshSchedule) -> NextRefresh {
        NextRefresh(dueAt: later(now, Int64(retryAfterSeconds), schedule), attempts: attempts, status: .rateLimited)
    }

    /// A refreshed receipt is due again at its not-before (Apple answers 304 before it), and in any case
    /// `expiryMarginSeconds` before it expires; an instant of the two already past is no schedule (a
    /// receipt handed back with a past not-before must not make the device due at once, again and again),
    /// and with neither ahead it is due after the 304 interval.
    static func dueAfterRefresh(_ receipt: RefreshedReceipt, now: Timestamp, _ schedule: RefreshSchedule) -> Timestamp {
        let beforeExpiry = receipt.expirationTime.map { $0.microseconds.subtractingReportingOverflow(schedule.expiryMarginSeconds * 1_000_000) }
            .flatMap { $0.overflow ? nil : Timestamp(microseconds: $0.partialValue) }
        guard let due = [receipt.notBefore, beforeExpiry].compactMap({ $0 }).filter({ $0 > now }).min() else {
            return later(now, schedule.notModifiedSeconds, schedule)
        }
        return clamp(due, now: now, schedule)
    }

    /// `initial × 2^attempts` (`initial` the schedule's first backoff unless given), capped.
    static func backoff(attempts: Int, from initial: Int64? = nil, _ schedule: RefreshSchedule) -> Int64 {
        let doublings = min(max(attempts, 0), 40)
        let (value, overflow) = (initial ?? schedule.backoffInitialSeconds).multipliedReportingOverflow(by: Int64(1) << doublings)
        return overflow ? schedule.backoffCapSeconds : min(value, schedule.backoffCapSeconds)
    }

    /// Whole seconds, rounded up; negative durations are none.
    static func seconds(_ duration: Duration) -> Int64 {
        let (whole, fraction) = duration.components
        return max(0, fraction > 0 ? whole &+ 1 : whole)
    }

    /// `now` plus `seconds`, within the schedule's bounds.
    static func later(_ now: Timestamp, _ seconds: Int64, _ schedule: RefreshSchedule) -> Timestamp {
        let bounded = min(max(seconds, schedule.minimumSeconds), schedule.maximumSeconds)
        return now.adding(seconds: bounded)
    }

    /// `instant`, moved into the schedule's bounds from now.
    static func clamp(_ instant: Timestamp, now: Timestamp, _ schedule: RefreshSchedule) -> Timestamp {
        min(max(instant, now.adding(seconds: schedule.minimumSeconds)), now.adding(seconds: schedule.maximumSeconds))
    }
}
