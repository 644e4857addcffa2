/// Input bounds (SPEC 7 defaults): objects over them are rejected before any parsing.
public struct VerifierLimits: Sendable {
    public var maxAttestationObjectBytes = 64 * 1024
    public var maxAssertionBytes = 4 * 1024
    public var maxCBORDepth = 16

    public init() {}
}
