import AttestCore
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import Foundation
import Synchronization

/// One batch's view of device histories, monthly counts and quotas: read once before deciding and moved
/// by each decision, so later jobs of the batch see earlier ones (lanes decide in parallel, hence the
/// lock). The database applies the same changes as increments at commit, so concurrent workers add up
/// exactly; only a quota can be overshot by the devices other workers admit while this batch decides.
final class IntelligenceLedger: Sendable {
    private let state: Mutex<IntelligenceSnapshot>
    /// The devices the database had already counted when the batch began: their rows exist, so their
    /// verdicts skip the insert-if-absent (most accepted jobs of a month are of devices counted before).
    private let countedBefore: Set<MonthlyDevice>

    init(_ snapshot: IntelligenceSnapshot) {
        state = Mutex(snapshot)
        countedBefore = snapshot.counted
    }

    /// Forgets what `device_risk` holds for these devices, so their next decisions write their rows: for
    /// decisions that were not stored (a lost counter race) after their risk was taken as written.
    func forgetScores(of devices: [AppDevice]) {
        state.withLock { s in
            for device in devices { s.scores[device] = nil }
        }
    }

    /// Applies the quota to an accepted attestation of a device not yet counted this month (turning it
    /// into quota_exceeded), then scores the device with this verdict and fills `deviceIntelligence`.
    /// - Parameter stored: the key's device as known before this job (same app), if any.
    func assess(_ verdict: inout Verdict, job: Job, keyBytes: [UInt8]?, stored: DeviceRecord?, app: AppPolicy?) -> IntelligenceChange {
        let identity = DeviceIdentity(job: job, keyBytes: keyBytes, stored: stored)
        let device = AppDevice(teamId: job.teamId, bundleId: job.bundleId, identity: identity)
        let month = AppMonth(teamId: job.teamId, bundleId: job.bundleId, month: job.receivedAt.utcMonth)
        let monthly = MonthlyDevice(month: month, identity: identity)
        let newKey = stored.map { DeviceIdentity(record: $0) != identity } ?? true
        return state.withLock { s in
            if verdict.ok, job.kind == .attestation, let app, let limit = app.madLimit, !s.counted.contains(monthly) {
                let quota = s.quotas[month] ?? MonthlyQuota()
                if quota.stopsNewDevices(at: job.receivedAt, limit: limit, graceDays: app.graceDays) {
                    verdict.failure = VerificationFailure(.quotaExceeded, .quotaExceeded, "monthly active device limit reached")
                    verdict.quota = (limit, quota.devices)
                }
            }
            if verdict.ok && s.counted.insert(monthly).inserted {
                var quota = s.quotas[month] ?? MonthlyQuota()
                quota.devices += 1
                if let limit = app?.madLimit, quota.devices >= limit, quota.limitReachedAt == nil {
                    quota.limitReachedAt = job.receivedAt
                }
                s.quotas[month] = quota
            }
            var history = s.histories[device] ?? DeviceHistory()
            let event = DeviceEvent(verdict, newKey: newKey)
            history.record(event, at: job.receivedAt)
            if history.deviceId == nil {
                history.deviceId = job.givenDeviceId ?? stored.map(\.deviceId).flatMap { $0.isEmpty ? nil : $0 }
                    ?? UUID().uuidString.lowercased()
            }
            s.histories[device] = history
            let deviceId = job.givenDeviceId ?? history.deviceId!
            let signals = history.signals(at: job.receivedAt, extensions: verdict.extensions)
            let assessment = RiskModel.assess(signals, policy: app?.risk ?? RiskPolicy())
            let held = HeldScore(assessment)
            let writesRisk = event.changesHistory || s.scores[device] != held
            s.scores[device] = held
            verdict.deviceIntelligence = DeviceIntelligence(deviceId: deviceId, assessment: assessment, history: history)
            return IntelligenceChange(
                device: device, month: month.month, event: event, deviceId: history.deviceId!, assessment: assessment,
                writesRisk: writesRisk, countsAsActive: verdict.ok && !countedBefore.contains(monthly), keyId: keyBytes)
        }
    }
}
