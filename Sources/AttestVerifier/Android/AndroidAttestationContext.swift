import AttestCore

/// What the Android attestation checks read, decoded from the request, and what they establish in order.
struct AndroidAttestationContext {
    /// Leaf first, root last.
    let chain: [Certificate]
    let challenge: [UInt8]
    let policy: AndroidPolicy
    let time: Timestamp
    let chains: AndroidChainVerifier
    /// The status list the chain is checked against (nil: none loaded).
    let statusList: AndroidStatusList?

    var leaf: Certificate { chain[0] }
    /// Set by the KeyDescription check.
    var keyDescription: KeyDescription! = nil
}

/// One step of docs/CHECK_ORDER.md's Android attestation table, with the reason it reports.
protocol AndroidAttestationCheck: Sendable {
    func evaluate(_ context: inout AndroidAttestationContext) -> VerificationFailure?
}
