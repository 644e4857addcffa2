/// Strict base64 for job fields: the standard or the URL-safe alphabet (not mixed), padding optional but
/// correct when present, no whitespace, and no non-zero bits left over in the last character, so that one
/// byte string has few encodings and garbage never decodes by accident.
public enum Base64 {
    /// Decodes `text`, or returns nil when it is not strict base64. One pass over the UTF-8 in place, a table
    /// lookup per character, straight into the result's storage (attestation objects are kilobytes).
    public static func decode(_ text: String) -> [UInt8]? {
        text.utf8.withContiguousStorageIfAvailable { decode(utf8: $0) }
            ?? Array(text.utf8).withUnsafeBufferPointer { decode(utf8: $0) }
    }

    private static func decode(utf8: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var end = utf8.count
        while end > 0, utf8[end - 1] == UInt8(ascii: "=") { end -= 1 }
        let padding = utf8.count - end
        if padding > 2 || (padding > 0 && utf8.count % 4 != 0) { return nil }
        let quads = end / 4, rest = end % 4
        if rest == 1 { return nil }
        var alphabets: UInt8 = 0
        var tail: UInt32 = 0
        // Four characters to three bytes at a time, then the last two or three characters to one or two
        // bytes: exactly end * 3 / 4 bytes.
        let out = [UInt8](unsafeUninitializedCapacity: end * 3 / 4) { buffer, count in
            decodeTable.withUnsafeBufferPointer { table in
                func sextet(_ i: Int) -> UInt32 {
                    let entry = table[Int(utf8[i])]
                    alphabets |= entry
                    return UInt32(entry & 0x3f)
                }
                for q in 0..<quads {
                    let i = q * 4, o = q * 3
                    let n = sextet(i) << 18 | sextet(i + 1) << 12 | sextet(i + 2) << 6 | sextet(i + 3)
                    buffer[o] = UInt8(truncatingIfNeeded: n >> 16)
                    buffer[o + 1] = UInt8(truncatingIfNeeded: n >> 8)
                    buffer[o + 2] = UInt8(truncatingIfNeeded: n)
                }
                let i = quads * 4, o = quads * 3
                if rest >= 2 {
                    tail = sextet(i) << 12 | sextet(i + 1) << 6 | (rest == 3 ? sextet(i + 2) : 0)
                    buffer[o] = UInt8(truncatingIfNeeded: tail >> 10)
                    if rest == 3 { buffer[o + 1] = UInt8(truncatingIfNeeded: tail >> 2) }
                }
            }
            count = end * 3 / 4
        }
        // Both flags: a character that is not base64, or the two alphabets' extra characters mixed.
        guard alphabets & invalid != invalid else { return nil }
        // Leftover bits must be zero: "QR==" and "QQ==" must not both decode to "A" (4 bits left after one
        // byte from two characters, 2 after two bytes from three).
        if rest == 2 && tail & 0x3ff != 0 || rest == 3 && tail & 0x3 != 0 { return nil }
        return out
    }

    /// Flags in a decode table entry above its six-bit value; both together mark a byte that is no base64.
    private static let standard: UInt8 = 0x40, urlSafe: UInt8 = 0x80, invalid: UInt8 = standard | urlSafe

    /// Per byte: the six-bit value, with `standard` for "+" and "/", `urlSafe` for "-" and "_", and both
    /// (`invalid`) for anything that is no base64 character.
    private static let decodeTable: [UInt8] = (0..<256).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt8(byte) - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt8(byte) - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62 | standard
        case UInt8(ascii: "/"): 63 | standard
        case UInt8(ascii: "-"): 62 | urlSafe
        case UInt8(ascii: "_"): 63 | urlSafe
        default: invalid
        }
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
}
