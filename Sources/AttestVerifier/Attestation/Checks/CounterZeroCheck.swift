import AttestCore
/// Apple step 7: a fresh attestation's sign counter is 0.
struct CounterZeroCheck: AttestationCheck {
    func evaluate(_ context: inout AttestationContext) -> VerificationFailure? {
        guard context.authenticatorData.counter == 0 else {
            return VerificationFailure(.appleValidationFailed, .counterNotZero, "counter is \(context.authenticatorData.counter)")
        }
        return nil
    }
}
