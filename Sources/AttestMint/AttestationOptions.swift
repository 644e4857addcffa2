import AttestCore
import Foundation

/// How to mint an attestation. Every default yields a valid object shaped like Apple's sample; each property
/// changes one thing, so a test can break exactly one check.
public struct AttestationOptions: Sendable {
    /// App Attest environment: selects the aaguid and the receipt's environment field.
    public enum Environment: Sendable {
        case production, development

        /// "appattest" + 7 zero bytes, or "appattestdevelop".
        var aaguid: [UInt8] {
            self == .production ? AttestedCredentialData.productionAAGUID : AttestedCredentialData.developmentAAGUID
        }

        /// Receipt field 7. Apple's production sample says "production"; "sandbox" for development is an assumption.
        var receiptValue: String { self == .production ? "production" : "sandbox" }
    }

    /// What the credential certificate says in its nonce extension 1.2.840.113635.100.8.2.
    public enum Nonce: Sendable {
        /// SHA-256(authData ‖ clientDataHash) in Apple's structure.
        case correct
        /// No nonce extension.
        case absent
        /// This value (normally 32 bytes) in Apple's structure SEQUENCE { [1] EXPLICIT OCTET STRING }.
        case value([UInt8])
        /// This extnValue verbatim, for malformed structures.
        case extensionValue([UInt8])
    }

    /// An attestation intermediate reissued with the same key and name as the PKI's, so the leaf still chains,
    /// but with other validity or constraints (expired, not yet valid, CA:FALSE, an unknown critical extension).
    public struct Intermediate: Sendable {
        public var notBefore: Date
        public var notAfter: Date
        public var isCA: Bool
        public var extraExtensions: [RawExtension]

        public init(notBefore: Date, notAfter: Date, isCA: Bool = true, extraExtensions: [RawExtension] = []) {
            self.notBefore = notBefore
            self.notAfter = notAfter
            self.isCA = isCA
            self.extraExtensions = extraExtensions
        }
    }

    /// The attStmt receipt.
    public enum Receipt: Sendable {
        case signed(ReceiptOptions)
        /// No "receipt" key in attStmt.
        case absent
        /// These bytes as the receipt, e.g. garbage that is not CMS.
        case raw([UInt8])
    }

    public var environment: Environment
    /// Apple sets AT only (0x40), even when the extension map follows; 0xC0 adds ED.
    public var flags: UInt8
    /// The sign count; anything but 0 is a fault.
    public var counter: UInt32
    /// Overrides the environment's aaguid (16 bytes expected).
    public var aaguid: [UInt8]?
    /// Hashes this App ID into rpIdHash instead of teamId.bundleId.
    public var rpIdAppId: String?
    /// Overrides the credentialId (normally the keyId).
    public var credentialId: [UInt8]?
    /// Overrides the COSE key (normally the device's, see `CBORItem.coseKey`).
    public var coseKey: CBORItem?
    /// The map after the COSE key; nil for none.
    public var extensions: CBORItem?
    /// Applied to the finished authData before the nonce and the leaf are computed from it, so structural faults
    /// (truncation, trailing bytes, a second map) reach the parser rather than failing the nonce check.
    public var transformAuthData: (@Sendable ([UInt8]) -> [UInt8])?
    /// Leaf validity; by default Apple's: from one day before the attestation time, for three days.
    public var leafNotBefore: Date?
    public var leafNotAfter: Date?
    public var nonce: Nonce
    /// Appended after the leaf's standard extensions.
    public var leafExtraExtensions: [RawExtension]
    /// Reissues the intermediate; nil uses the PKI's.
    public var intermediate: Intermediate?
    public var receipt: Receipt

    public init(
        environment: Environment = .production, flags: UInt8 = 0x40, counter: UInt32 = 0, aaguid: [UInt8]? = nil,
        rpIdAppId: String? = nil, credentialId: [UInt8]? = nil, coseKey: CBORItem? = nil,
        extensions: CBORItem? = .appleExtensions(), transformAuthData: (@Sendable ([UInt8]) -> [UInt8])? = nil,
        leafNotBefore: Date? = nil, leafNotAfter: Date? = nil, nonce: Nonce = .correct,
        leafExtraExtensions: [RawExtension] = [], intermediate: Intermediate? = nil,
        receipt: Receipt = .signed(ReceiptOptions())
    ) {
        self.environment = environment
        self.flags = flags
        self.counter = counter
        self.aaguid = aaguid
        self.rpIdAppId = rpIdAppId
        self.credentialId = credentialId
        self.coseKey = coseKey
        self.extensions = extensions
        self.transformAuthData = transformAuthData
        self.leafNotBefore = leafNotBefore
        self.leafNotAfter = leafNotAfter
        self.nonce = nonce
        self.leafExtraExtensions = leafExtraExtensions
        self.intermediate = intermediate
        self.receipt = receipt
    }
}
