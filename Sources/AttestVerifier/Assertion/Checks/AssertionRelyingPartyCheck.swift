import AttestCore
import AttestCrypto

/// Step 5: rpIdHash is SHA-256 of the App ID (teamId.bundleId), compared in constant time.
struct AssertionRelyingPartyCheck: AssertionCheck {
    func evaluate(_ context: AssertionContext) -> VerificationFailure? {
        guard ConstantTime.equal(context.authenticatorData.rpIdHash, Digest.sha256(utf8: context.teamId, ".", context.bundleId)) else {
            return VerificationFailure(.assertionInvalid, .rpIdMismatch, "rpIdHash is not SHA-256 of the App ID")
        }
        return nil
    }
}
