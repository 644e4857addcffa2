/// The trust anchors a verifier uses: Apple's pinned roots unless replaced explicitly (tests, load
/// generators). Each anchor owns its cache of verified CA certificates.
public struct TrustConfiguration: Sendable {
    public let attestation: ChainVerifier
    public let receipt: ReceiptVerifier
    /// True when the anchors are Apple's pinned roots.
    public let isApple: Bool

    public init(attestationAnchor: TrustAnchor, receiptAnchor: TrustAnchor) {
        attestation = ChainVerifier(anchor: attestationAnchor)
        receipt = ReceiptVerifier(anchor: receiptAnchor)
        isApple = attestationAnchor.sha256 == AppleRoots.appAttestationRoot.sha256
            && receiptAnchor.sha256 == AppleRoots.rootCAG3.sha256
    }

    /// Apple App Attestation Root CA and Apple Root CA - G3, pinned by SHA-256.
    public static var apple: TrustConfiguration {
        TrustConfiguration(attestationAnchor: AppleRoots.appAttestationRoot, receiptAnchor: AppleRoots.rootCAG3)
    }
}
