import AttestCore

/// Android step 3: no certificate of the chain is on Google's status list (revoked or suspended).
struct AndroidRevocationCheck: AndroidAttestationCheck {
    func evaluate(_ context: inout AndroidAttestationContext) -> VerificationFailure? {
        guard let list = context.statusList else { return nil }
        for (i, certificate) in context.chain.enumerated() {
            if let status = list.status(ofSerial: certificate.serialNumber) {
                return VerificationFailure(
                    .androidValidationFailed, .certificateRevoked, "certificate \(i) is on the status list (\(status.prefix(32)))")
            }
        }
        return nil
    }
}
