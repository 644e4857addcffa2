/// The keyUsage extension (RFC 5280 4.2.1.3) as its bit string; only the bits the verifier asks about.
public struct KeyUsage: Sendable, Equatable {
    public var bits: UInt16

    public static let digitalSignature: UInt16 = 1 << 15
    public static let keyCertSign: UInt16 = 1 << 10

    public init(der: [UInt8]) throws(ASN1Error) {
        var top = ASN1Reader(der)
        let element = try top.next(.bitString)
        try top.finish()
        let contents = top[element.contentRange]
        guard contents.count >= 2, contents.count <= 3, contents.first! < 8 else {
            throw ASN1Error(.invalidValue, at: element.start)
        }
        var bits: UInt16 = 0
        for (i, b) in contents.dropFirst().enumerated() { bits |= UInt16(b) << (8 - 8 * UInt16(i)) }
        self.bits = bits
    }

    public func contains(_ bit: UInt16) -> Bool { bits & bit != 0 }
}
