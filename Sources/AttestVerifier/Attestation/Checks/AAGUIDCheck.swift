import AttestCore

/// Apple step 8: the aaguid names the environment ("appattest" + 7 zero bytes for production,
/// "appattestdevelop" for development), and the app's policy accepts that environment.
struct AAGUIDCheck: AttestationCheck {
    func evaluate(_ context: inout AttestationContext) -> VerificationFailure? {
        let aaguid = context.credential.aaguid
        let environment: AppAttestEnvironment
        if aaguid.elementsEqual(AttestedCredentialData.productionAAGUID) {
            environment = .production
        } else if aaguid.elementsEqual(AttestedCredentialData.developmentAAGUID) {
            environment = .development
        } else {
            return VerificationFailure(.appleValidationFailed, .aaguidInvalid, "aaguid is not an App Attest one")
        }
        guard context.policy.allows(environment) else {
            return VerificationFailure(
                .appleValidationFailed, .environmentNotAllowed, "\(environment.rawValue) keys are not accepted")
        }
        context.environment = environment
        return nil
    }
}
