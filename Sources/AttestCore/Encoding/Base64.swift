/// Strict base64 for job fields: the standard or the URL-safe alphabet (not mixed), padding optional but
/// correct when present, no whitespace, and no non-zero bits left over in the last character, so that one
/// byte string has few encodings and garbage never decodes by accident.
public enum Base64 {
    /// Decodes `text`, or returns nil when it is not strict base64.
    public static func decode(_ text: String) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        var padding = 0
        while let last = utf8.last, last == UInt8(ascii: "=") {
            utf8.removeLast()
            padding += 1
        }
        if padding > 2 || (padding > 0 && (utf8.count + padding) % 4 != 0) { return nil }
        if utf8.count % 4 == 1 { return nil }
        var alphabet: Alphabet? = nil
        var out = [UInt8]()
        out.reserveCapacity(utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in utf8 {
            let v: UInt8
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = c - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = c - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"), UInt8(ascii: "/"):
                if alphabet == .urlSafe { return nil }
                alphabet = .standard
                v = c == UInt8(ascii: "+") ? 62 : 63
            case UInt8(ascii: "-"), UInt8(ascii: "_"):
                if alphabet == .standard { return nil }
                alphabet = .urlSafe
                v = c == UInt8(ascii: "-") ? 62 : 63
            default: return nil
            }
            accumulator = (accumulator << 6) | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero: "QR==" and "QQ==" must not both decode to "A".
        if bits > 0 && accumulator & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return out
    }

    /// Standard alphabet with padding, as verdicts carry bytes.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        encode(bytes, table: standardTable, padding: true)
    }

    /// base64url without padding (RFC 7515 §2), as JOSE writes every binary part of a token or key.
    public static func encodeURL(_ bytes: some Collection<UInt8>) -> String {
        encode(bytes, table: urlSafeTable, padding: false)
    }

    /// Decodes base64url without padding only, or returns nil: JOSE allows one encoding per byte string.
    public static func decodeURL(_ text: some StringProtocol) -> [UInt8]? {
        guard !text.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "=") })
        else { return nil }
        return decode(String(text))
    }

    private static let standardTable = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlSafeTable = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static func encode(_ bytes: some Collection<UInt8>, table: [UInt8], padding: Bool) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let b0 = iterator.next() {
            let b1 = iterator.next()
            let b2 = iterator.next()
            let n = UInt32(b0) << 16 | UInt32(b1 ?? 0) << 8 | UInt32(b2 ?? 0)
            out.append(table[Int(n >> 18 & 63)])
            out.append(table[Int(n >> 12 & 63)])
            if b1 != nil { out.append(table[Int(n >> 6 & 63)]) } else if padding { out.append(UInt8(ascii: "=")) }
            if b2 != nil { out.append(table[Int(n & 63)]) } else if padding { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private enum Alphabet { case standard, urlSafe }
}
