/// AlgorithmIdentifier (RFC 5280 4.1.1.2) for the algorithms this project reads: SHA-2 digests, ECDSA and
/// RSA PKCS #1 v1.5 signatures.
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

    /// A certificate's signature algorithm: parameters absent, except NULL for the sha*WithRSAEncryption
    /// algorithms, whose parameters RFC 4055 section 5 requires verifiers to accept both absent and NULL.
    static func signatureOID(_ element: ASN1Element, in reader: ASN1Reader) throws(ASN1Error) -> OID {
        var a = try reader.children(of: element)
        let oid = try a.objectIdentifier(of: a.next(.objectIdentifier))
        if rsaSignatureAlgorithms.contains(oid), !a.isAtEnd { try a.null(of: a.next(.null)) }
        try a.finish()
        return oid
    }

    private static let rsaSignatureAlgorithms: Set<OID> = [
        .sha256WithRSAEncryption, .sha384WithRSAEncryption, .sha512WithRSAEncryption,
    ]
}
