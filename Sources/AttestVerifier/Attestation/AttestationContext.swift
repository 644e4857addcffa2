import AttestCore
import AttestCrypto

/// Everything the attestation checks read, decoded from the request (steps 0–2), and what the checks
/// establish as they pass, in order.
struct AttestationContext {
    let appId: String
    let keyId: [UInt8]
    let clientDataHash: [UInt8]
    let object: AttestationObject
    let authenticatorData: AuthenticatorData
    let credential: AttestedCredentialData
    /// The credential's point imported by OpenSSL (so it is on P-256); equal to the leaf's key once checked.
    let credentialKey: ECPublicKey
    let policy: EnvironmentPolicy
    let time: Timestamp
    let trust: TrustConfiguration

    /// Set by the chain check.
    var leaf: Certificate! = nil
    /// Set by the aaguid check.
    var environment: AppAttestEnvironment! = nil
    /// Set by the receipt check.
    var receipt: Receipt! = nil
}

/// One of Apple's numbered validation steps (or a named addition), with the reason it reports.
protocol AttestationCheck: Sendable {
    func evaluate(_ context: inout AttestationContext) -> VerificationFailure?
}
