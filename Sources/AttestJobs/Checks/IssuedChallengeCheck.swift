import AttestCore
import AttestVerifier

/// For apps whose challenges the worker issues: the job presents one, in base64, and consumed it (the
/// store's answer, an input). Before any object check, so a job without a fresh challenge costs no ECDSA.
struct IssuedChallengeCheck: JobCheck {
    func evaluate(_ context: inout JobCheckContext) -> VerificationFailure? {
        guard case .worker(let refusal) = context.app.challenges else { return nil }
        guard let challenge = context.job.challenge else {
            return VerificationFailure(.challengeInvalid, .missingField, "challenge is required: this app's challenges are issued by the worker")
        }
        guard Base64.decode(challenge) != nil else {
            return VerificationFailure(.challengeInvalid, .malformedBase64, "challenge is not base64")
        }
        return refusal
    }
}
