import AttestCore
import Foundation

/// How to mint an Android key attestation. Every default yields a valid TEE attestation of a P-256 key,
/// shaped like a KeyMint 3 device's; each property changes one thing, so a test can break exactly one check.
public struct AndroidAttestationOptions: Sendable {
    /// A certificate of the minted chain, leaf first.
    public enum Position: Int, Sendable, CaseIterable {
        case leaf = 0, attestationKey, intermediate, root
    }

    /// What verified boot found, as the hardware-enforced rootOfTrust states it.
    public struct RootOfTrust: Sendable {
        public var verifiedBootKey: [UInt8]
        public var deviceLocked: Bool
        public var verifiedBootState: AttestCore.RootOfTrust.VerifiedBootState
        /// nil leaves the field out, as attestation versions before 3 do.
        public var verifiedBootHash: [UInt8]?

        public init(
            verifiedBootKey: [UInt8] = [UInt8](repeating: 0xB0, count: 32), deviceLocked: Bool = true,
            verifiedBootState: AttestCore.RootOfTrust.VerifiedBootState = .verified,
            verifiedBootHash: [UInt8]? = [UInt8](repeating: 0xB1, count: 32)
        ) {
            self.verifiedBootKey = verifiedBootKey
            self.deviceLocked = deviceLocked
            self.verifiedBootState = verifiedBootState
            self.verifiedBootHash = verifiedBootHash
        }
    }

    /// An authorization given as bytes, for tags the options do not model (a later KeyMint's, an unknown one).
    public struct Authorization: Sendable {
        public var tag: UInt32
        /// The DER inside the EXPLICIT [tag] wrapper.
        public var value: [UInt8]
        public var hardwareEnforced: Bool

        public init(tag: UInt32, value: [UInt8], hardwareEnforced: Bool = true) {
            self.tag = tag
            self.value = value
            self.hardwareEnforced = hardwareEnforced
        }
    }

    /// What the leaf carries as its KeyDescription extension (1.3.6.1.4.1.11129.2.1.17).
    public enum KeyDescriptionExtension: Sendable {
        /// The KeyDescription the options describe.
        case encoded
        /// No KeyDescription extension.
        case absent
        /// This extnValue verbatim.
        case value([UInt8])
        /// The encoded KeyDescription passed through a function (truncation, a flipped byte, trailing data).
        case transformed(@Sendable ([UInt8]) -> [UInt8])
    }

    /// An authority certificate reissued with the PKI's key and name, so the chain still links, but with other
    /// validity, constraints or extensions. A nil field keeps the PKI's.
    public struct Reissue: Sendable {
        public var notBefore: Date?
        public var notAfter: Date?
        /// false: an end entity (`CA:FALSE`, digitalSignature); true: a CA (keyCertSign).
        public var isCA: Bool?
        /// A CA's pathLenConstraint; nil: none.
        public var pathLength: Int?
        /// The keyUsage BIT STRING contents, unused-bits octet first (digitalSignature alone is [0x07, 0x80]);
        /// nil: the profile's.
        public var keyUsage: [UInt8]?
        public var extraExtensions: [RawExtension]

        public init(
            notBefore: Date? = nil, notAfter: Date? = nil, isCA: Bool? = nil, pathLength: Int? = nil, keyUsage: [UInt8]? = nil,
            extraExtensions: [RawExtension] = []
        ) {
            self.notBefore = notBefore
            self.notAfter = notAfter
            self.isCA = isCA
            self.pathLength = pathLength
            self.keyUsage = keyUsage
            self.extraExtensions = extraExtensions
        }
    }

    // MARK: KeyDescription

    /// The bytes the app passed to `setAttestationChallenge`.
    public var challenge: [UInt8]
    /// KeyMint 3 writes 300 for both.
    public var attestationVersion: Int
    public var keyMintVersion: Int
    public var attestationSecurityLevel: KeyDescription.SecurityLevel
    public var keyMintSecurityLevel: KeyDescription.SecurityLevel
    public var uniqueId: [UInt8]
    /// The attested key; nil: a fresh P-256 key per mint. keySize and ecCurve follow its curve.
    public var deviceKey: AndroidDeviceKey?

    /// The attestationApplicationId (software-enforced), as the framework writes it for the calling app.
    public var packageName: String
    public var packageVersion: Int
    /// SHA-256 digests of the app's signing certificates.
    public var signingCertificateDigests: [[UInt8]]
    /// false leaves attestationApplicationId out.
    public var includesApplicationId: Bool
    /// Software-enforced creationDateTime; nil leaves it out.
    public var creationDateTime: Date?

    /// KeyOrigin: 0 GENERATED, 1 DERIVED, 2 IMPORTED, 4 SECURELY_IMPORTED; nil leaves the tag out.
    public var origin: Int?
    /// nil leaves the hardware-enforced rootOfTrust out.
    public var rootOfTrust: RootOfTrust?
    /// Android 14 = 140000; nil leaves the tag out (as do the patch levels).
    public var osVersion: Int?
    /// YYYYMM.
    public var osPatchLevel: Int?
    /// YYYYMMDD.
    public var vendorPatchLevel: Int?
    public var bootPatchLevel: Int?
    /// Added to their list; the lists are then ordered by tag unless `tagsOutOfOrder`.
    public var extraAuthorizations: [Authorization]

    /// Writes this tag a second time, right after the first (in whichever list holds it): malformed.
    public var duplicateTag: AuthorizationList.Tag?
    /// Writes both lists in descending tag order, as one of Google's own samples has them: to be accepted.
    public var tagsOutOfOrder: Bool
    public var keyDescription: KeyDescriptionExtension

    // MARK: Certificates

    /// Leaf validity; by default a real leaf's, 1970-01-01 to 2048-01-01 (the keystore's defaults).
    public var leafNotBefore: Date
    public var leafNotAfter: Date
    /// Appended after the leaf's keyUsage and KeyDescription.
    public var leafExtraExtensions: [RawExtension]
    /// Reissue the PKI's certificates; nil uses the PKI's. The root is reissued self-signed with its own key,
    /// so it stays pinned.
    public var attestationKeyCertificate: Reissue?
    public var intermediate: Reissue?
    public var root: Reissue?
    /// Flips the last bit of this certificate's signature (still DER, no longer valid).
    public var tamperedSignature: Position?
    /// The chain as sent, by position; the default is leaf first, root last. A permutation sends it out of
    /// order, a shorter list leaves certificates out.
    public var chainOrder: [Position]

    public init(
        challenge: [UInt8] = Array("android-catalogue-challenge".utf8), attestationVersion: Int = 300, keyMintVersion: Int = 300,
        attestationSecurityLevel: KeyDescription.SecurityLevel = .trustedEnvironment,
        keyMintSecurityLevel: KeyDescription.SecurityLevel = .trustedEnvironment, uniqueId: [UInt8] = [],
        deviceKey: AndroidDeviceKey? = nil, packageName: String = "com.example.catalogue", packageVersion: Int = 1,
        signingCertificateDigests: [[UInt8]] = [AndroidAttestationOptions.defaultSigningCertificateDigest],
        includesApplicationId: Bool = true, creationDateTime: Date? = Date(timeIntervalSince1970: 1_704_067_200),
        origin: Int? = 0, rootOfTrust: RootOfTrust? = RootOfTrust(), osVersion: Int? = 140000, osPatchLevel: Int? = 202401,
        vendorPatchLevel: Int? = 20240105, bootPatchLevel: Int? = 20240105, extraAuthorizations: [Authorization] = [],
        duplicateTag: AuthorizationList.Tag? = nil, tagsOutOfOrder: Bool = false, keyDescription: KeyDescriptionExtension = .encoded,
        leafNotBefore: Date = Date(timeIntervalSince1970: 0), leafNotAfter: Date = Date(timeIntervalSince1970: 2_461_449_600),
        leafExtraExtensions: [RawExtension] = [], attestationKeyCertificate: Reissue? = nil, intermediate: Reissue? = nil,
        root: Reissue? = nil, tamperedSignature: Position? = nil, chainOrder: [Position] = Position.allCases
    ) {
        self.challenge = challenge
        self.attestationVersion = attestationVersion
        self.keyMintVersion = keyMintVersion
        self.attestationSecurityLevel = attestationSecurityLevel
        self.keyMintSecurityLevel = keyMintSecurityLevel
        self.uniqueId = uniqueId
        self.deviceKey = deviceKey
        self.packageName = packageName
        self.packageVersion = packageVersion
        self.signingCertificateDigests = signingCertificateDigests
        self.includesApplicationId = includesApplicationId
        self.creationDateTime = creationDateTime
        self.origin = origin
        self.rootOfTrust = rootOfTrust
        self.osVersion = osVersion
        self.osPatchLevel = osPatchLevel
        self.vendorPatchLevel = vendorPatchLevel
        self.bootPatchLevel = bootPatchLevel
        self.extraAuthorizations = extraAuthorizations
        self.duplicateTag = duplicateTag
        self.tagsOutOfOrder = tagsOutOfOrder
        self.keyDescription = keyDescription
        self.leafNotBefore = leafNotBefore
        self.leafNotAfter = leafNotAfter
        self.leafExtraExtensions = leafExtraExtensions
        self.attestationKeyCertificate = attestationKeyCertificate
        self.intermediate = intermediate
        self.root = root
        self.tamperedSignature = tamperedSignature
        self.chainOrder = chainOrder
    }

    /// The default signing certificate digest: 32 bytes of 0x5C standing for SHA-256 of the app's signer.
    public static let defaultSigningCertificateDigest = [UInt8](repeating: 0x5C, count: 32)
}
