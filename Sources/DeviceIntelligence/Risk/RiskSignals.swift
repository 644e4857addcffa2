/// What the risk model sees of one device (per app and identity), gathered from its stored history and
/// the job at hand. Plain values, so the model stays a pure function.
public struct RiskSignals: Sendable, Equatable {
    /// The key was attested in Apple's development environment (a development-signed build).
    public var developmentBuild = false
    /// Assertions rejected because their counter did not increase, in the failure window.
    public var counterReplays = 0
    /// Attestations rejected for what Apple certified of this key (`FailureEvidence`), in the failure window.
    public var failedAttestations = 0
    /// Assertions rejected for a bad signature under the stored key or a signed rpIdHash of another App ID,
    /// in the failure window.
    public var failedAssertions = 0
    /// Distinct keys attested under the device's identity (a regenerated key adds one).
    public var keys = 0
    /// Accepted attestations in the 24 hours before the job's receivedAt.
    public var attestationsLast24Hours = 0
    /// The receipt's risk metric, when Apple's receipt carried one.
    public var receiptRiskMetric: Int?
    /// How much the metric rose from the refreshed receipt before it, when that one was created at most
    /// `RiskModel.receiptGrowthWindowSeconds` earlier (a fall counts as no rise).
    public var receiptRiskMetricGrowth: Int?
    /// `apple_validation_category_01` when present in its documented form.
    public var validationCategory: UInt32?
    /// `apple_bundle_version_01` when present as text.
    public var bundleVersion: String?
    /// Android: the attestation's root of trust says the bootloader is unlocked.
    public var bootloaderUnlocked = false
    /// Android: the verified boot state is not VERIFIED (SELF_SIGNED, UNVERIFIED or FAILED): its name.
    public var bootState: String?
    /// Android: the key lives in a TEE, not StrongBox.
    public var noStrongBox = false
    /// Android: the OS patch level (YYYYMM) when it is more than ``RiskModel/patchLevelAllowanceMonths``
    /// older than the job, or the device reports none (0).
    public var stalePatchLevel: Int?

    public init() {}
}
