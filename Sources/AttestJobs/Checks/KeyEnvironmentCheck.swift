import AttestVerifier

/// An authentic assertion of a key is refused when the app no longer admits the environment the key was
/// attested in (a key keeps its environment): the attestation step's code and reason, so both read alike.
struct KeyEnvironmentCheck: JobCheck {
    func evaluate(_ context: inout JobCheckContext) -> VerificationFailure? {
        guard case .assertion? = context.verified, let stored = context.inputs.key?.environment else { return nil }
        if let environment = AppAttestEnvironment(rawValue: stored), context.app.environments.allows(environment) { return nil }
        context.verdict.counter = nil
        context.verdict.environment = AppAttestEnvironment(rawValue: stored)
        return VerificationFailure(.appleValidationFailed, .environmentNotAllowed, "\(stored) keys are not accepted")
    }
}
