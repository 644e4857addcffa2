import AttestVerifier

/// What one verdict adds to its device's history. Only rejections the device's key or Apple's chain vouch
/// for add a failure (`FailureEvidence`); the others, whoever sent them with the device's keyId, add nothing.
public struct DeviceEvent: Sendable, Equatable {
    /// An accepted attestation.
    public var attested = false
    /// The accepted attestation is of a key not attested before under this identity.
    public var newKey = false
    public var failedAttestation = false
    public var failedAssertion = false
    public var counterReplay = false
    /// Accepted attestations: the environment and the receipt's risk metric.
    public var environment: AppAttestEnvironment?
    public var receiptRiskMetric: Int?

    /// Whether `DeviceHistory.record` changes anything for this event (environment and receipt metric
    /// come only with an accepted attestation).
    public var changesHistory: Bool { attested || failed }

    /// A failure that counts against the device.
    public var failed: Bool { failedAttestation || failedAssertion || counterReplay }

    /// An event that adds nothing; AttestJobs' `init(_:newKey:)` fills it in from a verdict.
    public init() {}
}
