import AttestVerifier

/// The verifier's own ordered checks (AttestVerifier's attestation or assertion list) at the job's
/// receivedAt, recorded into the verdict.
struct ObjectCheck: JobCheck {
    func evaluate(_ context: inout JobCheckContext) -> VerificationFailure? {
        let job = context.job
        context.verdict.verificationTime = job.receivedAt
        switch job.payload {
        case .attestation(let request):
            switch context.verifier.attestations.verify(request, policy: context.app.environments, at: job.receivedAt) {
            case .failure(let failure): return failure
            case .success(let verified):
                context.verdict.environment = verified.environment
                context.verdict.counter = verified.counter
                context.verdict.publicKey = verified.publicKey
                context.verdict.receipt = verified.receipt
                context.verdict.extensions = verified.extensions
                context.verified = .attestation(verified)
            }
        case .assertion(let request):
            switch context.verifier.assertions.verify(request, device: context.inputs.key?.device) {
            case .failure(let failure): return failure
            case .success(let verified):
                context.verdict.counter = verified.counter
                context.verdict.extensions = verified.extensions
                context.verified = .assertion(verified)
            }
        }
        return nil
    }
}
