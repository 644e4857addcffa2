import AttestVerifier

/// For Android attestations, when the worker's status list is older than its bound and its stale-list
/// setting refuses (ATTEST_ANDROID_STATUS_LIST_STALE=refuse, the default): the attestation is refused before
/// any signature is checked, since a revoked chain could no longer be told from a valid one.
struct AndroidStatusListCheck: JobCheck {
    func evaluate(_ context: inout JobCheckContext) -> VerificationFailure? {
        guard case .android(let job, _) = context.job.payload, case .attestation = job.payload,
            case .failure(let refusal)? = context.inputs.androidStatusList
        else { return nil }
        return refusal
    }
}
