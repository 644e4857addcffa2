import AttestCore

/// An assertion that passed every check: the counter to store (by compare-and-set) and the extensions.
public struct VerifiedAssertion: Sendable {
    public let keyId: [UInt8]
    public let counter: UInt32
    public let extensions: AppleExtensions?
}
