import AttestCore

/// Android step 6: the attestation and the key are in a TEE or StrongBox (a software keystore proves
/// nothing about the device), and in StrongBox where the app requires it.
struct SecurityLevelCheck: AndroidAttestationCheck {
    func evaluate(_ context: inout AndroidAttestationContext) -> VerificationFailure? {
        let description = context.keyDescription!
        for (name, level) in [("attestation", description.attestationSecurityLevel), ("key", description.keyMintSecurityLevel)] {
            if level == .software {
                return VerificationFailure(.androidValidationFailed, .securityLevelInsufficient, "\(name) security level is SOFTWARE")
            }
            if context.policy.requireStrongBox && level != .strongBox {
                return VerificationFailure(
                    .androidValidationFailed, .securityLevelInsufficient, "\(name) security level is \(level.name); the app requires STRONG_BOX")
            }
        }
        return nil
    }
}
