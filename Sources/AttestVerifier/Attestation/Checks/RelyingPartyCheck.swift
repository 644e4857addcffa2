import AttestCore
import AttestCrypto

/// Apple step 6: rpIdHash is SHA-256 of the App ID (teamId.bundleId).
struct RelyingPartyCheck: AttestationCheck {
    func evaluate(_ context: inout AttestationContext) -> VerificationFailure? {
        guard ConstantTime.equal(context.authenticatorData.rpIdHash, Digest.sha256.hash(context.appId.utf8)) else {
            return VerificationFailure(.appleValidationFailed, .rpIdMismatch, "rpIdHash is not SHA-256 of the App ID")
        }
        return nil
    }
}
