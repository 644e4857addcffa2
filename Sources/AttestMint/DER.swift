import AttestCore

/// Builds DER (and, for the receipt, BER indefinite-length) encodings from already-encoded parts.
///
/// Certificates and the CMS receipt are assembled by hand rather than through OpenSSL's X509/CMS builders so every
/// byte can mirror Apple's objects and be varied one fault at a time.
enum DER {
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        [tag] + length(content.count) + content
    }

    /// A BER constructed element with indefinite length: the content is followed by end-of-contents octets.
    static func indefinite(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        [tag, 0x80] + content + [0x00, 0x00]
    }

    static func length(_ count: Int) -> [UInt8] {
        guard count >= 0x80 else { return [UInt8(count)] }
        let bytes = bigEndian(UInt64(count), bytes: 8).drop { $0 == 0 }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    static func sequence(_ parts: [[UInt8]]) -> [UInt8] { tlv(0x30, parts.flatMap { $0 }) }

    static func set(_ parts: [[UInt8]]) -> [UInt8] { tlv(0x31, parts.flatMap { $0 }) }

    /// An explicitly tagged, context-specific constructed element `[n]`.
    static func explicit(_ number: UInt8, _ content: [UInt8]) -> [UInt8] { tlv(0xA0 | number, content) }

    static func integer(_ value: Int) -> [UInt8] {
        precondition(value >= 0, "only non-negative integers are needed")
        return integer(magnitude: bigEndian(UInt64(value), bytes: 8))
    }

    /// A non-negative INTEGER from big-endian magnitude bytes: leading zeros removed, a zero byte added when the
    /// high bit would otherwise make it negative.
    static func integer(magnitude: [UInt8]) -> [UInt8] {
        var digits = Array(magnitude.drop { $0 == 0 })
        if digits.first.map({ $0 & 0x80 != 0 }) ?? true { digits.insert(0, at: 0) }
        return tlv(0x02, digits)
    }

    static func octetString(_ bytes: [UInt8]) -> [UInt8] { tlv(0x04, bytes) }

    /// A BIT STRING with no unused bits (keys, signatures).
    static func bitString(_ bytes: [UInt8]) -> [UInt8] { tlv(0x03, [0] + bytes) }

    static func utf8String(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }

    static func printableString(_ text: String) -> [UInt8] { tlv(0x13, Array(text.utf8)) }

    static let booleanTrue: [UInt8] = [0x01, 0x01, 0xFF]

    static let null: [UInt8] = [0x05, 0x00]

    /// UTCTime or GeneralizedTime, whole seconds, as `Timestamp.asn1Time` chooses per RFC 5280 section 4.1.2.5.
    static func time(_ time: Timestamp) -> [UInt8] {
        let (tag, text) = time.asn1Time
        return tlv(tag == .utcTime ? 0x17 : 0x18, Array(text.utf8))
    }

    static func oid(_ oid: OID) -> [UInt8] { tlv(0x06, oid.encoded) }
}
