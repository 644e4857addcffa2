/// AlgorithmIdentifier (RFC 5280 4.1.1.2) for the algorithms this project reads: SHA-2 digests and ECDSA.
enum AlgorithmIdentifier {
    /// The OID. ECDSA signature algorithms have absent parameters (RFC 5758); digest algorithms in CMS may
    /// carry NULL, which `allowsNull` admits.
    static func oid(_ element: ASN1Element, in reader: ASN1Reader, allowsNull: Bool = true) throws(ASN1Error) -> OID {
        var a = try reader.children(of: element)
        let oid = try a.objectIdentifier(of: a.next(.objectIdentifier))
        if allowsNull && !a.isAtEnd { _ = try a.next(.null) }
        try a.finish()
        return oid
    }
}
