/// One X.509 extension: its OID, criticality and the OCTET STRING contents.
public struct CertificateExtension: Sendable {
    public let oid: OID
    public let critical: Bool
    public let value: [UInt8]

    init(_ element: ASN1Element, in reader: ASN1Reader) throws(ASN1Error) {
        var r = try reader.children(of: element)
        oid = try r.objectIdentifier(of: r.next(.objectIdentifier))
        if let flag = try r.nextIf(.boolean) {
            // DER: a DEFAULT FALSE field is omitted, never encoded as FALSE.
            guard try r.boolean(of: flag) else { throw ASN1Error(.invalidValue, at: flag.start) }
            critical = true
        } else {
            critical = false
        }
        value = try r.octets(of: r.next(.octetString))
        try r.finish()
    }
}
