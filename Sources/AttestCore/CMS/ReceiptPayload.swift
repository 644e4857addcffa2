/// The App Attest receipt payload: a DER `SET OF SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`
/// (Apple: "Assessing fraud risk"). Field numbers as Apple documents them.
public struct ReceiptPayload: Sendable {
    public enum Field: Int, Sendable {
        case appId = 2
        case attestedPublicKey = 3
        case clientHash = 4
        case token = 5
        case receiptType = 6
        case environment = 7
        case creationTime = 12
        case riskMetric = 17
        case notBefore = 19
        case expirationTime = 21
    }

    public let fields: [Int: [UInt8]]

    public init(der bytes: [UInt8]) throws(ASN1Error) {
        var top = ASN1Reader(bytes)
        let set = try top.next(.set)
        try top.finish()
        var items = try top.children(of: set)
        var fields = [Int: [UInt8]]()
        while !items.isAtEnd {
            let start = items.position
            var item = try items.children(of: items.next(.sequence))
            let type = try item.integer(of: item.next(.integer))
            _ = try item.integer(of: item.next(.integer))
            let value = try item.octets(of: item.next(.octetString))
            try item.finish()
            guard fields[type] == nil else { throw ASN1Error(.invalidValue, at: start) }
            fields[type] = value
        }
        self.fields = fields
    }

    public subscript(field: Field) -> [UInt8]? { fields[field.rawValue] }

    /// A field as UTF-8 text.
    public func text(_ field: Field) -> String? {
        self[field].flatMap { String(validating: $0, as: UTF8.self) }
    }
}
