import AttestCore
/// Android step 2: the chain to a pinned root (``AndroidChainVerifier``).
struct AndroidChainCheck: AndroidAttestationCheck {
    func evaluate(_ context: inout AndroidAttestationContext) -> VerificationFailure? {
        context.chains.verify(context.chain, at: context.time)
    }
}
