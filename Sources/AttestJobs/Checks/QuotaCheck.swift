import AttestVerifier

/// The app's monthly active device limit, last: only an attestation that passed every other check would
/// count a new device, and the quota turns it away once the limit and its grace period are spent.
extension VerifiedObject {
    /// An attested key, of either platform: what brings a device.
    public var isAttestation: Bool {
        switch self {
        case .attestation, .androidAttestation: true
        case .assertion, .androidAssertion: false
        }
    }
}

struct QuotaCheck: JobCheck {
    func evaluate(_ context: inout JobCheckContext) -> VerificationFailure? {
        guard context.verified?.isAttestation == true, let quota = context.inputs.quota, let refused = quota(context.job) else {
            return nil
        }
        context.verdict.quota = refused
        return VerificationFailure(.quotaExceeded, .quotaExceeded, "monthly active device limit reached")
    }
}
