/// What an app requires of an Android attestation beyond what every accepted one proves (a chain to a
/// pinned root, the challenge, TEE or StrongBox, a key generated in the secure hardware, the app's package
/// and signer). What it does not require is still reported in the verdict and weighs in its risk.
public struct AndroidPolicy: Sendable, Equatable {
    /// The package the attestation must name (a job's `packageName`).
    public var packageName: String
    /// SHA-256 digests of the app's signing certificates: every digest the attestation lists must be one
    /// of them. nil: not checked (only the offline `verify` of a line without `signingCertificateDigests`).
    public var signingCertificateDigests: Set<[UInt8]>?
    /// Refuse keys outside StrongBox (a TEE key is otherwise accepted).
    public var requireStrongBox = false
    /// Refuse devices whose verified boot state is not VERIFIED or whose bootloader is unlocked; when
    /// false they are accepted as risk factors (device-intelligence.md).
    public var requireVerifiedBoot = false
    /// The oldest OS patch level accepted, as YYYYMM (the KeyMint tag's form); nil: any.
    public var minimumOSPatchLevel: Int?
    /// The oldest OS version accepted, as KeyMint writes it (Android 14 = 140000); nil: any.
    public var minimumOSVersion: Int?

    public init(
        packageName: String, signingCertificateDigests: Set<[UInt8]>?, requireStrongBox: Bool = false,
        requireVerifiedBoot: Bool = false, minimumOSPatchLevel: Int? = nil, minimumOSVersion: Int? = nil
    ) {
        self.packageName = packageName
        self.signingCertificateDigests = signingCertificateDigests
        self.requireStrongBox = requireStrongBox
        self.requireVerifiedBoot = requireVerifiedBoot
        self.minimumOSPatchLevel = minimumOSPatchLevel
        self.minimumOSVersion = minimumOSVersion
    }
}
