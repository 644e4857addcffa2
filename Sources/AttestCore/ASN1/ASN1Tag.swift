/// An identifier octet(s) of a BER/DER element: class, constructed bit and tag number.
public struct ASN1Tag: Sendable, Hashable, CustomStringConvertible {
    public enum TagClass: UInt8, Sendable {
        case universal = 0, application = 1, contextSpecific = 2, `private` = 3
    }

    public var tagClass: TagClass
    public var constructed: Bool
    public var number: UInt32

    public init(_ tagClass: TagClass, constructed: Bool, number: UInt32) {
        self.tagClass = tagClass
        self.constructed = constructed
        self.number = number
    }

    public static let boolean = ASN1Tag(.universal, constructed: false, number: 1)
    public static let integer = ASN1Tag(.universal, constructed: false, number: 2)
    public static let bitString = ASN1Tag(.universal, constructed: false, number: 3)
    public static let octetString = ASN1Tag(.universal, constructed: false, number: 4)
    public static let null = ASN1Tag(.universal, constructed: false, number: 5)
    public static let objectIdentifier = ASN1Tag(.universal, constructed: false, number: 6)
    public static let enumerated = ASN1Tag(.universal, constructed: false, number: 10)
    public static let utf8String = ASN1Tag(.universal, constructed: false, number: 12)
    public static let sequence = ASN1Tag(.universal, constructed: true, number: 16)
    public static let set = ASN1Tag(.universal, constructed: true, number: 17)
    public static let utcTime = ASN1Tag(.universal, constructed: false, number: 23)
    public static let generalizedTime = ASN1Tag(.universal, constructed: false, number: 24)

    /// `[n]` context-specific, constructed (EXPLICIT tagging or IMPLICIT of a constructed type).
    public static func context(_ number: UInt32, constructed: Bool = true) -> ASN1Tag {
        ASN1Tag(.contextSpecific, constructed: constructed, number: number)
    }

    public var description: String {
        let cls = ["UNIVERSAL", "APPLICATION", "CONTEXT", "PRIVATE"][Int(tagClass.rawValue)]
        return "[\(cls) \(number)\(constructed ? " cons" : "")]"
    }
}
