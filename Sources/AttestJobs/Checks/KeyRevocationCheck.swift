import AttestCore
import AttestVerifier

/// An authentic attestation or assertion of a key the operator revoked is refused with reattest_required:
/// the device must attest a new key (an App Attest keyId is its key's hash, so the same key sent again is
/// the same revoked keyId). After the object check, so a forged object still gets its own reason.
struct KeyRevocationCheck: JobCheck {
    func evaluate(_ context: inout JobCheckContext) -> VerificationFailure? {
        guard context.verified != nil, let revokedAt = context.inputs.keyRevokedAt else { return nil }
        context.verdict.counter = nil
        return VerificationFailure(.reattestRequired, .keyRevoked, "the key was revoked at \(revokedAt.rfc3339)")
    }
}
