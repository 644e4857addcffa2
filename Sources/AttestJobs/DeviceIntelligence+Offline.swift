import AttestCore
import DeviceIntelligence

extension DeviceIntelligence {
    /// What the job alone shows, for the offline verifier (no store): the device is its key, its history
    /// is this verdict, the policy the default one, and its id the job's deviceId or else its keyId.
    public static func offline(_ verdict: Verdict, of job: Job) -> DeviceIntelligence {
        var history = DeviceHistory()
        history.record(DeviceEvent(verdict, newKey: true), at: job.receivedAt)
        let signals = history.signals(at: job.receivedAt, extensions: verdict.extensions)
        return DeviceIntelligence(
            deviceId: job.givenDeviceId ?? job.keyId, assessment: RiskModel.assess(signals, policy: RiskPolicy()),
            history: history)
    }
}
