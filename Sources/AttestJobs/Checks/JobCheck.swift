import AttestCore
import AttestVerifier

/// One step of a job's check order (CONTRACT 7), with the code and reason it reports; the first failure
/// decides.
protocol JobCheck: Sendable {
    func evaluate(_ context: inout JobCheckContext) -> VerificationFailure?
}

/// What the job checks read, and what they establish as they pass, in order.
struct JobCheckContext {
    let job: Job
    let inputs: JobCheckInputs
    let verifier: JobVerifier
    /// The verdict being built: its failure is set by the runner, other fields by the checks.
    var verdict: Verdict
    /// Set by the app check.
    var app: AppRules! = nil
    /// Set by the object check.
    var verified: VerifiedObject? = nil
}

/// An object that passed the verifier's own ordered checks.
public enum VerifiedObject: Sendable {
    case attestation(VerifiedAttestation)
    case assertion(VerifiedAssertion)
    case androidAttestation(VerifiedAndroidAttestation)
    /// An Android request signed by the key of `keyId` (base64): no counter, its challenge is its freshness.
    case androidAssertion(keyId: String)
}
