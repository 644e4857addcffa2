import AttestCore
import AttestCrypto

/// Step 4: ES256 over nonce = SHA256(authenticatorData ‖ clientDataHash), so the digest verified is
/// SHA256(nonce); DER signatures only, high-S accepted.
struct SignatureCheck: AssertionCheck {
    func evaluate(_ context: AssertionContext) -> VerificationFailure? {
        let digest = Digest.sha256OfSHA256(context.object.authenticatorData, context.clientDataHash)
        guard context.device.publicKey.verify(signature: context.object.signature, digest: digest) else {
            return VerificationFailure(.assertionInvalid, .signatureInvalid, "signature does not verify")
        }
        return nil
    }
}
