import AttestCore
import AttestVerifier
import DeviceIntelligence

extension RiskSignals {
    /// What an accepted Android attestation adds to the risk signals (docs/device-intelligence.md): an
    /// unlocked bootloader, a boot state other than VERIFIED, a key outside StrongBox, an OS patch level
    /// over ``RiskModel/patchLevelAllowanceMonths`` older than the job (or none reported).
    public mutating func add(_ attestation: VerifiedAndroidAttestation, receivedAt: Timestamp) {
        let description = attestation.keyDescription
        if let root = description.hardwareEnforced.rootOfTrust {
            bootloaderUnlocked = !root.deviceLocked
            bootState = root.verifiedBootState == .verified ? nil : root.verifiedBootState.name
        }
        noStrongBox = description.keyMintSecurityLevel != .strongBox
        let level = description.hardwareEnforced.integer(.osPatchLevel) ?? 0
        let month = receivedAt.utcMonth.split(separator: "-").compactMap { Int($0) }
        if month.count == 2, (month[0] * 12 + month[1] - 1) - (level / 100 * 12 + level % 100 - 1) > RiskModel.patchLevelAllowanceMonths {
            stalePatchLevel = level
        }
    }
}

extension DeviceIntelligence {
    /// What an Android job alone shows, for the offline verifier: as ``offline(_:of:)`` for Apple jobs, with
    /// the attestation's own risk signals.
    public static func offline(_ verdict: Verdict, of job: AndroidJob) -> DeviceIntelligence {
        let deviceId = job.metadata["deviceId"].flatMap { $0.isEmpty ? nil : $0 } ?? verdict.keyId ?? job.jobId
        return offline(verdict, receivedAt: job.receivedAt, deviceId: deviceId)
    }
}
