import AttestCore
import AttestCrypto

/// Apple step 9: the credentialId is the keyId.
struct CredentialIdCheck: AttestationCheck {
    func evaluate(_ context: inout AttestationContext) -> VerificationFailure? {
        guard ConstantTime.equal(context.credential.credentialId, context.keyId) else {
            return VerificationFailure(.appleValidationFailed, .credentialIdMismatch, "credentialId is not the keyId")
        }
        return nil
    }
}
