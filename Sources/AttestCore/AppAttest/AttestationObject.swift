/// The CBOR attestation object `{fmt, attStmt: {x5c, receipt}, authData}`, structurally checked
/// (docs/CHECK_ORDER.md attestation step 1). The certificates and the receipt stay bytes here; the verifier
/// parses and checks them in their own steps.
public struct AttestationObject: Sendable {
    public static let appleFormat = "apple-appattest"

    public enum Failure: Error, Sendable, Equatable {
        case malformed(String)
        case trailingData
        case unsupportedFormat
        case missingCertificates
    }

    public let format: String
    public let certificates: [[UInt8]]
    /// The `receipt` entry as found: absent, or any CBOR value (the receipt step requires bytes).
    public let receipt: CBORValue?
    public let authenticatorData: [UInt8]

    public init(cbor bytes: [UInt8], maxDepth: Int = 16) throws(Failure) {
        let top = try CBORDecoder(maxDepth: maxDepth).decodeObjectMap(
            bytes, trailing: Failure.trailingData, malformed: Failure.malformed)
        guard case .text(let format)? = top["fmt"] else { throw .malformed("fmt missing or not text") }
        guard case .map? = top["attStmt"] else { throw .malformed("attStmt missing or not a map") }
        guard case .bytes(let authData)? = top["authData"] else { throw .malformed("authData missing or not bytes") }
        let statement = top["attStmt"]!
        var certificates = [[UInt8]]()
        if let x5c = statement["x5c"] {
            guard case .array(let items) = x5c else { throw .malformed("x5c is not an array") }
            for item in items {
                guard case .bytes(let der) = item else { throw .malformed("x5c entry is not bytes") }
                certificates.append(der)
            }
        }
        guard format == Self.appleFormat else { throw .unsupportedFormat }
        guard !certificates.isEmpty else { throw .missingCertificates }
        self.format = format
        self.certificates = certificates
        self.receipt = statement["receipt"]
        self.authenticatorData = authData
    }
}
