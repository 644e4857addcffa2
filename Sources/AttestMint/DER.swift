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

    /// UTCTime for 1950-2049 and GeneralizedTime otherwise, whole seconds, as RFC 5280 section 4.1.2.5 requires.
    static func time(_ date: UTCDateTime) -> [UInt8] {
        if (1950...2049).contains(date.year) {
            return tlv(0x17, Array((date.digits.dropFirst(2) + "Z").utf8))
        }
        return tlv(0x18, Array((date.digits + "Z").utf8))
    }

    /// An OBJECT IDENTIFIER from dotted decimal text. Malformed text is a programming error.
    static func oid(_ dotted: String) -> [UInt8] {
        let arcs = dotted.split(separator: ".").map { UInt64($0) }
        guard arcs.count >= 2, let first = arcs[0], let second = arcs[1], first <= 2, first == 2 || second < 40,
              arcs.allSatisfy({ $0 != nil })
        else { preconditionFailure("malformed object identifier \(dotted)") }
        var content = base128(first * 40 + second)
        for arc in arcs.dropFirst(2) { content += base128(arc!) }
        return tlv(0x06, content)
    }

    private static func base128(_ value: UInt64) -> [UInt8] {
        var out = [UInt8(value & 0x7F)]
        var rest = value >> 7
        while rest > 0 {
            out.insert(UInt8(rest & 0x7F) | 0x80, at: 0)
            rest >>= 7
        }
        return out
    }
}
