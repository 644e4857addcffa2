import AttestCore

/// Android step 9, where the app requires verified boot: the boot state is VERIFIED and the bootloader
/// locked. Otherwise both are reported and weigh in the risk score.
struct RootOfTrustCheck: AndroidAttestationCheck {
    func evaluate(_ context: inout AndroidAttestationContext) -> VerificationFailure? {
        guard context.policy.requireVerifiedBoot else { return nil }
        guard let root = context.keyDescription.hardwareEnforced.rootOfTrust, root.verifiedBootState == .verified else {
            return VerificationFailure(.androidValidationFailed, .bootStateUnverified, "verified boot state is not VERIFIED")
        }
        guard root.deviceLocked else {
            return VerificationFailure(.androidValidationFailed, .deviceUnlocked, "the bootloader is unlocked")
        }
        return nil
    }
}
