import AttestCore

/// Android step 10: the OS version and patch level the secure hardware reports are at least the app's
/// minimums; one the attestation does not report fails a minimum that is set.
struct OSLevelCheck: AndroidAttestationCheck {
    func evaluate(_ context: inout AndroidAttestationContext) -> VerificationFailure? {
        let hardware = context.keyDescription.hardwareEnforced
        if let minimum = context.policy.minimumOSVersion, (hardware.integer(.osVersion) ?? -1) < minimum {
            return VerificationFailure(.androidValidationFailed, .osOutdated, "OS version below the app's minimum \(minimum)")
        }
        if let minimum = context.policy.minimumOSPatchLevel, (hardware.integer(.osPatchLevel) ?? -1) < minimum {
            return VerificationFailure(.androidValidationFailed, .osOutdated, "OS patch level below the app's minimum \(minimum)")
        }
        return nil
    }
}
