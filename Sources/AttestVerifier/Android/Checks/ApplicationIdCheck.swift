import AttestCore
import AttestCrypto

/// Android step 8: the attestation application id names the app's package, and every signing certificate
/// digest it lists is one the app registered (the framework lists the installed package's signers, so a
/// repackaged app lists its repackager's).
struct ApplicationIdCheck: AndroidAttestationCheck {
    func evaluate(_ context: inout AndroidAttestationContext) -> VerificationFailure? {
        guard let application = context.keyDescription.softwareEnforced.attestationApplicationId else {
            return VerificationFailure(.androidValidationFailed, .keyDescriptionInvalid, "KeyDescription: no attestationApplicationId")
        }
        guard application.packages.contains(where: { ExactText.equal($0.name, context.policy.packageName) }) else {
            return VerificationFailure(.androidValidationFailed, .packageNameMismatch, "the attestation names another package")
        }
        if let registered = context.policy.signingCertificateDigests {
            guard !application.signatureDigests.isEmpty, application.signatureDigests.allSatisfy(registered.contains) else {
                return VerificationFailure(
                    .androidValidationFailed, .signingCertificateMismatch, "the app is signed by a certificate its registration does not list")
            }
        }
        return nil
    }
}
