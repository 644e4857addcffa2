import AttestVerifier

/// The verifier's own ordered checks (AttestVerifier's attestation or assertion list, Apple's or Android's)
/// at the job's receivedAt, recorded into the verdict.
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
        case .android(let android, _):
            return evaluate(android, &context)
        }
        return nil
    }

    private func evaluate(_ job: AndroidJob, _ context: inout JobCheckContext) -> VerificationFailure? {
        switch job.payload {
        case .attestation(let request):
            // The app check let only apps with an Android registration this far.
            var statusList: AndroidStatusList? = nil
            if case .success(let held)? = context.inputs.androidStatusList { statusList = held }
            switch context.verifier.androidAttestations.verify(
                request, policy: context.app.android!, statusList: statusList, at: job.receivedAt)
            {
            case .failure(let failure): return failure
            case .success(let verified):
                context.verdict.keyId = verified.keyId
                context.verdict.publicKey = verified.subjectPublicKeyInfo
                context.verdict.android = verified
                context.verified = .androidAttestation(verified)
            }
        case .assertion(let request):
            if let failure = context.verifier.androidAssertions.verify(request, storedKey: context.inputs.androidKey) { return failure }
            context.verified = .androidAssertion(keyId: request.keyId)
        }
        return nil
    }
}
