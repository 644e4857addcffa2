import AttestCore
import AttestCrypto

/// Apple steps 2–4: nonce = SHA256(authData ‖ clientDataHash) equals the credential certificate's
/// extension 1.2.840.113635.100.8.2. A missing or malformed extension fails the same way.
struct NonceCheck: AttestationCheck {
    func evaluate(_ context: inout AttestationContext) -> VerificationFailure? {
        let nonce = Digest.sha256(context.authenticatorData.bytes, context.clientDataHash)
        guard let ext = context.leaf.extension(.appleNonce), let certified = AppleNonceExtension.nonce(from: ext.value),
            ConstantTime.equal(certified, nonce)
        else {
            return VerificationFailure(
                .appleValidationFailed, .nonceMismatch, "credential certificate nonce does not match")
        }
        return nil
    }
}
