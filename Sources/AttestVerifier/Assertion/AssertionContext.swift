import AttestCore
import AttestCrypto

/// Everything the assertion checks read: the request decoded (steps 1–2) and the key attested earlier for
/// its keyId (step 3), so no check has to ask whether one exists.
struct AssertionContext {
    /// The App ID's parts (teamId.bundleId), hashed without joining them.
    let teamId: String
    let bundleId: String
    let keyId: [UInt8]
    let clientDataHash: [UInt8]
    let object: AssertionObject
    let authenticatorData: AuthenticatorData
    let device: StoredDevice
}

/// One of the assertion steps after the key lookup, with the reason it reports.
protocol AssertionCheck: Sendable {
    func evaluate(_ context: AssertionContext) -> VerificationFailure?
}
