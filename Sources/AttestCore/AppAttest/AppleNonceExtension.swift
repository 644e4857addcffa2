/// The credential certificate's nonce extension (1.2.840.113635.100.8.2):
/// `SEQUENCE { [1] EXPLICIT OCTET STRING nonce }`.
public enum AppleNonceExtension {
    /// The nonce, or nil when the extension value is not exactly that structure.
    public static func nonce(from value: [UInt8]) -> [UInt8]? {
        do {
            var top = ASN1Reader(value)
            let sequence = try top.next(.sequence)
            try top.finish()
            var fields = try top.children(of: sequence)
            let tagged = try fields.next(.context(1))
            try fields.finish()
            var inner = try fields.children(of: tagged)
            let octets = try inner.octets(of: inner.next(.octetString))
            try inner.finish()
            return octets
        } catch {
            return nil
        }
    }
}
