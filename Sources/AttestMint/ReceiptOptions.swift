import Foundation

/// How to mint the attestation receipt. Defaults give what Apple embeds in an attestation: type ATTEST, fields
/// 2, 3, 4, 5, 6, 7, 12, 21, signed without signed attributes by the PKI's receipt signer. A refreshed receipt
/// (`TestPKI.mintReceipt`) sets type RECEIPT, the risk metric and not-before.
public struct ReceiptOptions: Sendable {
    /// A receipt signing certificate reissued with the same key and name but other validity or marker.
    public struct Signer: Sendable {
        public var notBefore: Date
        public var notAfter: Date
        /// Apple's marker extension 1.2.840.113635.100.12.15; false leaves it out.
        public var marker: Bool

        public init(notBefore: Date, notAfter: Date, marker: Bool = true) {
            self.notBefore = notBefore
            self.notAfter = notAfter
            self.marker = marker
        }
    }

    /// CMS signed attributes. Apple signs eContent directly; verifiers must still handle attributes correctly.
    public enum SignedAttributes: Sendable {
        case none
        /// contentType and a correct messageDigest; the signature covers the attributes.
        case valid
        /// Correctly signed attributes whose messageDigest does not match eContent.
        case wrongMessageDigest
    }

    /// Field 2; default teamId.bundleId.
    public var appId: String?
    /// Field 3; default the minted credential certificate. Another device's certificate is the "wrong key" fault.
    public var credentialCertificate: [UInt8]?
    /// Field 4; default the clientDataHash.
    public var clientHash: [UInt8]?
    /// Field 5; default 64 random bytes in base64.
    public var token: String?
    /// Field 6: "ATTEST" or, for a refreshed receipt, "RECEIPT".
    public var type: String
    /// Field 7; default from the attestation's environment.
    public var environment: String?
    /// Field 12; default the attestation time.
    public var creationTime: Date?
    /// Field 21; default 90 days after creation, as in Apple's sample.
    public var expirationTime: Date?
    /// Field 17, as decimal text, which refreshed receipts carry; nil leaves it out.
    public var riskMetric: Int?
    /// Field 19, which refreshed receipts carry: before it, Apple answers a refresh with 304; nil leaves it out.
    public var notBefore: Date?
    /// Field numbers left out of the payload.
    public var omittedFields: Set<Int>
    /// Reissues the signer certificate; nil uses the PKI's.
    public var signer: Signer?
    /// Signs with another PKI's receipt chain (e.g. one with identical names but other keys).
    public var signingPKI: TestPKI?
    /// Apple's receipts carry the root too; a verifier must still anchor on its own copy.
    public var includeRootCertificate: Bool
    public var signedAttributes: SignedAttributes
    /// Flips a bit of the signature, which stays well-formed DER.
    public var corruptSignature: Bool

    public init(
        appId: String? = nil, credentialCertificate: [UInt8]? = nil, clientHash: [UInt8]? = nil, token: String? = nil,
        type: String = "ATTEST", environment: String? = nil, creationTime: Date? = nil, expirationTime: Date? = nil,
        riskMetric: Int? = nil, notBefore: Date? = nil, omittedFields: Set<Int> = [], signer: Signer? = nil, signingPKI: TestPKI? = nil,
        includeRootCertificate: Bool = true, signedAttributes: SignedAttributes = .none, corruptSignature: Bool = false
    ) {
        self.appId = appId
        self.credentialCertificate = credentialCertificate
        self.clientHash = clientHash
        self.token = token
        self.type = type
        self.environment = environment
        self.creationTime = creationTime
        self.expirationTime = expirationTime
        self.riskMetric = riskMetric
        self.notBefore = notBefore
        self.omittedFields = omittedFields
        self.signer = signer
        self.signingPKI = signingPKI
        self.includeRootCertificate = includeRootCertificate
        self.signedAttributes = signedAttributes
        self.corruptSignature = corruptSignature
    }
}
