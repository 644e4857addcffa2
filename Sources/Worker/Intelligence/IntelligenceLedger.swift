import AttestCore
import AttestCrypto
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import Foundation
import Store
import Synchronization

/// One batch's view of device histories, monthly counts and quotas: read once before deciding and moved
/// by each decision in batch order (the decide stage's second step, on one thread; the lock only makes the
/// value safe to share), so later jobs of the batch see earlier ones. The database applies the same
/// changes as increments at commit, so concurrent workers add up exactly; only a quota can be overshot by
/// the devices other workers admit while this batch decides.
final class IntelligenceLedger: Sendable {
    private let state: Mutex<State>
    /// The devices the database had already counted when the batch began: their rows exist, so their
    /// verdicts skip the insert-if-absent (most accepted jobs of a month are of devices counted before).
    private let countedBefore: Set<MonthlyDevice>

    private struct State {
        var snapshot: IntelligenceSnapshot
        /// The devices an accepted decision of this batch counts: only a device's first accepted decision
        /// goes to the insert-if-absent, not its later ones (a device's jobs often come together, and each
        /// candidate costs the insert a probe of `verdicts`). Under the batch's locks every decision is
        /// stored, so the first is the one the database would have picked; only a writer that takes no lock
        /// can leave one unstored, and the batch then runs again.
        var counting: Set<MonthlyDevice> = []
    }

    init(_ snapshot: IntelligenceSnapshot) {
        state = Mutex(State(snapshot: snapshot))
        countedBefore = snapshot.counted
    }

    /// The quota step of the check list, for an attestation that passed every other check: the limit and
    /// the devices counted when the app's quota turns its device away (not yet counted this month, limit and
    /// grace spent), else nil, and the device is counted at once, so the next job's quota step sees it.
    /// - Parameter stored: the key's device as known before this job (same app), if any.
    func admit(_ job: Job, keyBytes: [UInt8]?, stored: DeviceRecord?, app: AppPolicy) -> (limit: Int, current: Int)? {
        guard let limit = app.madLimit else { return nil }
        let identity = DeviceIdentity(job: job, keyBytes: keyBytes, stored: stored)
        let month = AppMonth(teamId: job.teamId, bundleId: job.bundleId, month: job.receivedAt.utcMonth)
        let monthly = MonthlyDevice(month: month, identity: identity)
        return state.withLock { state in
            guard !state.snapshot.counted.contains(monthly) else { return nil }
            let quota = state.snapshot.quotas[month] ?? MonthlyQuota()
            if quota.stopsNewDevices(at: job.receivedAt, limit: limit, graceDays: app.graceDays) {
                return (limit, quota.devices)
            }
            Self.count(monthly, in: &state.snapshot, limit: limit, at: job.receivedAt)
            return nil
        }
    }

    /// Scores the device with this verdict (the check list's, quota included), counts an accepted job's
    /// device for its month and fills `deviceIntelligence`.
    /// - Parameter stored: the key's device as known before this job (same app), if any.
    func assess(_ verdict: inout Verdict, job: Job, keyBytes: [UInt8]?, stored: DeviceRecord?, app: AppPolicy?) -> IntelligenceChange {
        let identity = DeviceIdentity(job: job, keyBytes: keyBytes, stored: stored)
        let device = AppDevice(teamId: job.teamId, bundleId: job.bundleId, identity: identity)
        let month = AppMonth(teamId: job.teamId, bundleId: job.bundleId, month: job.receivedAt.utcMonth)
        let monthly = MonthlyDevice(month: month, identity: identity)
        let newKey = stored.map { DeviceIdentity(record: $0) != identity } ?? true
        return state.withLock { state in
            if verdict.ok { Self.count(monthly, in: &state.snapshot, limit: app?.madLimit, at: job.receivedAt) }
            let counts = verdict.ok && !countedBefore.contains(monthly) && state.counting.insert(monthly).inserted
            var history = state.snapshot.histories[device] ?? DeviceHistory()
            let event = DeviceEvent(verdict, newKey: newKey)
            history.record(event, at: job.receivedAt)
            if history.deviceId == nil {
                history.deviceId = job.givenDeviceId ?? stored.map(\.deviceId).flatMap { $0.isEmpty ? nil : $0 }
                    ?? (try? SecureRandom.uuid()) ?? UUID().uuidString.lowercased()
            }
            state.snapshot.histories[device] = history
            let deviceId = job.givenDeviceId ?? history.deviceId!
            var signals = history.signals(at: job.receivedAt, extensions: verdict.extensions)
            if let android = verdict.android { signals.add(android, receivedAt: job.receivedAt) }
            let assessment = RiskModel.assess(signals, policy: app?.risk ?? RiskPolicy())
            let held = HeldScore(assessment)
            let writesRisk = event.changesHistory || state.snapshot.scores[device] != held
            state.snapshot.scores[device] = held
            verdict.deviceIntelligence = DeviceIntelligence(deviceId: deviceId, assessment: assessment, history: history)
            return IntelligenceChange(
                device: device, month: month.month, event: event, deviceId: history.deviceId!, assessment: assessment,
                writesRisk: writesRisk, countsAsActive: counts, keyId: keyBytes)
        }
    }

    /// Counts `monthly` once for its month; the count reaching the limit starts the grace period.
    private static func count(_ monthly: MonthlyDevice, in s: inout IntelligenceSnapshot, limit: Int?, at receivedAt: Timestamp) {
        guard s.counted.insert(monthly).inserted else { return }
        var quota = s.quotas[monthly.month] ?? MonthlyQuota()
        quota.devices += 1
        if let limit, quota.devices >= limit, quota.limitReachedAt == nil {
            quota.limitReachedAt = receivedAt
        }
        s.quotas[monthly.month] = quota
    }
}
