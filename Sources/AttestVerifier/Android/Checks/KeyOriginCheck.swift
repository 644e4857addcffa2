import AttestCore

/// Android step 7: the secure hardware generated the key (hardware-enforced origin GENERATED), so no copy
/// of it exists outside the device.
struct KeyOriginCheck: AndroidAttestationCheck {
    func evaluate(_ context: inout AndroidAttestationContext) -> VerificationFailure? {
        guard context.keyDescription.hardwareEnforced.integer(.origin) == AuthorizationList.originGenerated else {
            return VerificationFailure(.androidValidationFailed, .keyNotHardwareGenerated, "the key's origin is not GENERATED in hardware")
        }
        return nil
    }
}
