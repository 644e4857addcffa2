import AttestCore
import DeviceIntelligence

extension DeviceIntelligence {
    /// What the job alone shows, for the offline verifier (no store): the device is its key, its history
    /// is this verdict, the policy the default one, and its id the job's deviceId or else its keyId.
    public static func offline(_ verdict: Verdict, of job: Job) -> DeviceIntelligence {
        offline(verdict, receivedAt: job.receivedAt, deviceId: job.givenDeviceId ?? job.keyId)
    }

    /// Either platform's: the history is this verdict, the signals its own (an Android attestation's too).
    static func offline(_ verdict: Verdict, receivedAt: Timestamp, deviceId: String) -> DeviceIntelligence {
        var history = DeviceHistory()
        history.record(DeviceEvent(verdict, newKey: true), at: receivedAt)
        var signals = history.signals(at: receivedAt, extensions: verdict.extensions)
        if let android = verdict.android { signals.add(android, receivedAt: receivedAt) }
        return DeviceIntelligence(deviceId: deviceId, assessment: RiskModel.assess(signals, policy: RiskPolicy()), history: history)
    }
}
