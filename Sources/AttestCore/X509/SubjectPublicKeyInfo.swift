/// A DER SubjectPublicKeyInfo as stored for an attested Android key: read for its algorithm, so the key is
/// handed to the verifier of its kind.
public enum SubjectPublicKeyInfo {
    /// The key's algorithm OID when `der` is exactly one SubjectPublicKeyInfo, else nil.
    public static func algorithm(of der: [UInt8]) -> OID? {
        do {
            var top = ASN1Reader(der)
            let info = try top.next(.sequence)
            try top.finish()
            var fields = try top.children(of: info)
            var algorithm = try fields.children(of: fields.next(.sequence))
            let oid = try algorithm.objectIdentifier(of: algorithm.next(.objectIdentifier))
            _ = try fields.bitStringBytes(of: fields.next(.bitString))
            try fields.finish()
            return oid
        } catch {
            return nil
        }
    }
}
