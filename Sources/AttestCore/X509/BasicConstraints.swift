/// The basicConstraints extension (RFC 5280 4.2.1.9): whether the subject is a CA, and its path length.
public struct BasicConstraints: Sendable, Equatable {
    public var isCA: Bool
    public var pathLength: Int?

    public init(isCA: Bool, pathLength: Int?) {
        self.isCA = isCA
        self.pathLength = pathLength
    }

    public init(der: [UInt8]) throws(ASN1Error) {
        var top = ASN1Reader(der)
        let sequence = try top.next(.sequence)
        try top.finish()
        var r = try top.children(of: sequence)
        var isCA = false
        if let flag = try r.nextIf(.boolean) {
            guard try r.boolean(of: flag) else { throw ASN1Error(.invalidValue, at: flag.start) }
            isCA = true
        }
        var pathLength: Int? = nil
        if let length = try r.nextIf(.integer) {
            let n = try r.integer(of: length)
            guard n >= 0 else { throw ASN1Error(.invalidValue, at: length.start) }
            pathLength = n
        }
        try r.finish()
        self.isCA = isCA
        self.pathLength = pathLength
    }
}
