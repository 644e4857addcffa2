import AttestCore
import Testing

/// The table-driven decoder against the rules one by one and against a plain reference decoder (the
/// character-by-character one it replaced), over every byte value and every padding shape.
@Suite struct Base64DecodeTableTests {
    /// Strict base64 decoded the obvious way: the behaviour `Base64.decode` must keep.
    static func reference(_ text: String) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        var padding = 0
        while let last = utf8.last, last == UInt8(ascii: "=") {
            utf8.removeLast()
            padding += 1
        }
        if padding > 2 || (padding > 0 && (utf8.count + padding) % 4 != 0) || utf8.count % 4 == 1 { return nil }
        let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let urlSafe = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        let usesStandard = utf8.contains { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }
        let usesURLSafe = utf8.contains { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
        if usesStandard && usesURLSafe { return nil }
        let alphabet = usesURLSafe ? urlSafe : standard
        var out = [UInt8]()
        var accumulator: UInt32 = 0
        var bits = 0
        for c in utf8 {
            guard let v = alphabet.firstIndex(of: c) else { return nil }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        if bits > 0 && accumulator & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return out
    }

    /// Every byte value in every position of a group, unpadded and padded.
    @Test func everyByteInEveryPositionDecidesAsTheReference() {
        for template in ["QUJD", "QUI=", "QQ==", "QUJDRA", "QUJDREU", "+/+/", "-_-_", "QUJDREVG"] {
            let bytes = Array(template.utf8)
            for position in bytes.indices {
                for value in 0...255 {
                    var changed = bytes
                    changed[position] = UInt8(value)
                    // Bytes above 0x7f alone are no UTF-8; the text is what a job's JSON string would carry.
                    let text = String(decoding: changed, as: UTF8.self)
                    #expect(Base64.decode(text) == Self.reference(text), "\(template) [\(position)] = \(value)")
                }
            }
        }
    }

    @Test func alphabetsMixedAnywhereAreRejected() {
        let body = String(repeating: "QUJD", count: 250)
        for (first, second) in [("+", "-"), ("/", "_"), ("-", "/"), ("_", "+")] {
            #expect(Base64.decode(first + "AAA" + body + "AAA" + second) == nil)
            #expect(Base64.decode(second + "AAA" + body + "AAA" + first) == nil)
        }
        #expect(Base64.decode("+AAA" + body + "AAA/") != nil)
        #expect(Base64.decode("-AAA" + body + "AAA_") != nil)
    }

    @Test func lengthsAndPaddingDecideAsTheReference() {
        for n in 0..<64 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 * 59 + 3) }
            let padded = Base64.encode(bytes)
            let unpadded = String(padded.prefix { $0 != "=" })
            #expect(Base64.decode(padded) == bytes)
            #expect(Base64.decode(unpadded) == bytes)
            for text in [padded + "=", unpadded + "=", unpadded + "===", "=" + unpadded, unpadded + "A", unpadded + "A=="] {
                #expect(Base64.decode(text) == Self.reference(text), "\(text)")
            }
        }
    }
}
