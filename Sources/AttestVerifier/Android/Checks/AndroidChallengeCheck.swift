import AttestCore
import AttestCrypto

/// Android step 5: `attestationChallenge` is exactly the job's challenge bytes.
struct AndroidChallengeCheck: AndroidAttestationCheck {
    func evaluate(_ context: inout AndroidAttestationContext) -> VerificationFailure? {
        guard ConstantTime.equal(context.keyDescription.attestationChallenge, context.challenge) else {
            return VerificationFailure(.androidValidationFailed, .challengeMismatch, "attestationChallenge is not the job's challenge")
        }
        return nil
    }
}
