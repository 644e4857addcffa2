import AttestCore
/// Apple step 9: the credentialId is the keyId.
struct CredentialIdCheck: AttestationCheck {
    func evaluate(_ context: inout AttestationContext) -> VerificationFailure? {
        guard context.credential.credentialId.elementsEqual(context.keyId) else {
            return VerificationFailure(.appleValidationFailed, .credentialIdMismatch, "credentialId is not the keyId")
        }
        return nil
    }
}
