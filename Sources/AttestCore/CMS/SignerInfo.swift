/// One CMS SignerInfo identified by issuer and serial number.
public struct SignerInfo: Sendable {
    /// The DER of the signer certificate's issuer Name and its serial number's contents.
    public let issuer: [UInt8]
    public let serialNumber: [UInt8]
    public let digestAlgorithm: OID
    /// The signed attributes re-tagged as the SET the signature covers (RFC 5652 5.4), when present.
    public let signedAttributes: [UInt8]?
    public let signatureAlgorithm: OID
    public let signature: [UInt8]

    init(_ element: ASN1Element, in reader: ASN1Reader) throws(ASN1Error) {
        var r = try reader.children(of: element)
        guard try r.integer(of: r.next(.integer)) == 1 else { throw ASN1Error(.invalidValue, at: element.start) }
        var sid = try r.children(of: r.next(.sequence))
        let issuer = try sid.next(.sequence)
        guard !issuer.indefinite else { throw ASN1Error(.invalidValue, at: issuer.start) }
        self.issuer = Array(reader.bytes[issuer.encodedRange])
        serialNumber = Array(try sid.integerBytes(of: sid.next(.integer)))
        try sid.finish()
        digestAlgorithm = try AlgorithmIdentifier.oid(r.next(.sequence), in: r)
        if let attributes = try r.nextIf(.context(0)) {
            // Signed attributes must be DER so that the signed SET can be rebuilt by changing one tag byte.
            guard !attributes.indefinite else { throw ASN1Error(.indefiniteLength, at: attributes.start) }
            var der = Array(reader.bytes[attributes.encodedRange])
            der[0] = 0x31
            signedAttributes = der
        } else {
            signedAttributes = nil
        }
        signatureAlgorithm = try AlgorithmIdentifier.oid(r.next(.sequence), in: r)
        signature = try r.octets(of: r.next(.octetString))
        _ = try r.nextIf(.context(1))
        try r.finish()
    }

    /// The value of the signed attribute `type` when it occurs exactly once with one value.
    public func signedAttribute(_ type: OID) -> [UInt8]? {
        guard let signedAttributes else { return nil }
        do {
            var top = ASN1Reader(signedAttributes)
            var set = try top.children(of: top.next(.set))
            var found: [UInt8]? = nil
            while !set.isAtEnd {
                var attribute = try set.children(of: set.next(.sequence))
                let oid = try attribute.objectIdentifier(of: attribute.next(.objectIdentifier))
                var values = try attribute.children(of: attribute.next(.set))
                let value = try values.next()
                try values.finish()
                try attribute.finish()
                if oid == type {
                    guard found == nil else { return nil }
                    found = Array(signedAttributes[value.encodedRange])
                }
            }
            return found
        } catch {
            return nil
        }
    }
}
