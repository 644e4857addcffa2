import AttestCore

/// Android step 4: the leaf carries exactly one KeyDescription extension that parses strictly, with a root
/// of trust in its hardware-enforced list (every TEE and StrongBox attestation has one).
struct KeyDescriptionCheck: AndroidAttestationCheck {
    func evaluate(_ context: inout AndroidAttestationContext) -> VerificationFailure? {
        guard let ext = context.leaf.extension(.androidKeyDescription) else {
            return Self.invalid("the leaf has no KeyDescription extension")
        }
        do {
            context.keyDescription = try KeyDescription(der: ext.value)
        } catch {
            return Self.invalid("KeyDescription: \(error)")
        }
        guard context.keyDescription.hardwareEnforced.rootOfTrust != nil
            || context.keyDescription.attestationSecurityLevel == .software
        else { return Self.invalid("KeyDescription: no rootOfTrust in the hardware-enforced list") }
        return nil
    }

    static func invalid(_ message: String) -> VerificationFailure {
        VerificationFailure(.androidValidationFailed, .keyDescriptionInvalid, message)
    }
}
