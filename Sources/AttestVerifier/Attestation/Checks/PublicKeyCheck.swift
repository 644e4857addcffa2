import AttestCore
/// WebAuthn §8.8: the credential public key in authenticator data is the certified key.
struct PublicKeyCheck: AttestationCheck {
    func evaluate(_ context: inout AttestationContext) -> VerificationFailure? {
        guard context.credential.publicKey == context.leaf.publicKey else {
            return VerificationFailure(
                .appleValidationFailed, .publicKeyMismatch, "COSE key differs from the certificate key")
        }
        return nil
    }
}
