import AttestCore

/// Apple step 1: x5c holds exactly the credential certificate and the intermediate, and
/// `x5c[0] ← x5c[1] ← pinned App Attestation root` verifies at the job's time.
struct CertificateChainCheck: AttestationCheck {
    func evaluate(_ context: inout AttestationContext) -> VerificationFailure? {
        let x5c = context.object.certificates
        guard x5c.count == 2 else {
            return VerificationFailure(
                .appleValidationFailed, .certificateChainInvalid, "x5c holds \(x5c.count) certificates, not 2")
        }
        let leaf: Certificate
        let intermediate: Certificate
        do {
            leaf = try Certificate(der: x5c[0])
            // The intermediate is shared by every device: a warm job finds it already parsed.
            intermediate = try context.trust.attestation.cache.certificate(for: x5c[1]) ?? Certificate(der: x5c[1])
        } catch {
            return VerificationFailure(.appleValidationFailed, .certificateChainInvalid, "unparsable certificate: \(error)")
        }
        switch context.trust.attestation.verify(leaf: leaf, intermediates: [intermediate], at: context.time) {
        case .failure(.invalid(let why)):
            return VerificationFailure(.appleValidationFailed, .certificateChainInvalid, why)
        case .failure(.expired(let why)):
            return VerificationFailure(.appleValidationFailed, .certificateExpired, why)
        case .success:
            context.leaf = leaf
            return nil
        }
    }
}
