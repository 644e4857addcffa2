/// A strict, bounded JSON parser (RFC 8259): no trailing commas, no comments, valid UTF-8 and escapes,
/// unique object keys, limited nesting. Jobs come from outside; it must never crash or hang.
enum JSONParser {
    static func parse(_ bytes: [UInt8], maxDepth: Int) -> JSONValue? {
        var p = Cursor(bytes: bytes, maxDepth: maxDepth)
        p.skipWhitespace()
        guard let value = p.value(depth: 0) else { return nil }
        p.skipWhitespace()
        return p.i == bytes.count ? value : nil
    }

    struct Cursor {
        let bytes: [UInt8]
        let maxDepth: Int
        var i = 0

        init(bytes: [UInt8], maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        mutating func skipWhitespace() {
            while i < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[i]) { i += 1 }
        }

        mutating func literal(_ word: String) -> Bool {
            let w = Array(word.utf8)
            guard bytes.count - i >= w.count, bytes[i..<i + w.count].elementsEqual(w) else { return false }
            i += w.count
            return true
        }

        mutating func value(depth: Int) -> JSONValue? {
            guard i < bytes.count else { return nil }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                guard depth < maxDepth else { return nil }
                i += 1
                var members = [(String, JSONValue)]()
                var keys = Set<String>()
                skipWhitespace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
                    i += 1
                    return .object(members)
                }
                while true {
                    skipWhitespace()
                    guard let key = string(), keys.insert(key).inserted else { return nil }
                    skipWhitespace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
                    i += 1
                    skipWhitespace()
                    guard let v = value(depth: depth + 1) else { return nil }
                    members.append((key, v))
                    skipWhitespace()
                    guard i < bytes.count else { return nil }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                    return nil
                }
            case UInt8(ascii: "["):
                guard depth < maxDepth else { return nil }
                i += 1
                var items = [JSONValue]()
                skipWhitespace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
                    i += 1
                    return .array(items)
                }
                while true {
                    skipWhitespace()
                    guard let v = value(depth: depth + 1) else { return nil }
                    items.append(v)
                    skipWhitespace()
                    guard i < bytes.count else { return nil }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                    return nil
                }
            case UInt8(ascii: "\""):
                return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            default: return number()
            }
        }

        mutating func number() -> JSONValue? {
            let start = i
            if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, isDigit(bytes[i]) else { return nil }
            if bytes[i] == UInt8(ascii: "0") { i += 1 } else { while i < bytes.count, isDigit(bytes[i]) { i += 1 } }
            var integral = true
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                integral = false
                i += 1
                guard i < bytes.count, isDigit(bytes[i]) else { return nil }
                while i < bytes.count, isDigit(bytes[i]) { i += 1 }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                integral = false
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard i < bytes.count, isDigit(bytes[i]) else { return nil }
                while i < bytes.count, isDigit(bytes[i]) { i += 1 }
            }
            let text = String(decoding: bytes[start..<i], as: UTF8.self)
            if integral, let n = Int64(text) { return .int(n) }
            return Double(text).map(JSONValue.double)
        }

        func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

        mutating func string() -> String? {
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return nil }
            i += 1
            // Most strings hold no escape: their bytes become the String at once, else they start the buffer.
            let start = i
            while i < bytes.count, bytes[i] != UInt8(ascii: "\""), bytes[i] != UInt8(ascii: "\\"), bytes[i] >= 0x20 { i += 1 }
            guard i < bytes.count else { return nil }
            if bytes[i] == UInt8(ascii: "\"") {
                i += 1
                return String(validating: bytes[start..<(i - 1)], as: UTF8.self)
            }
            var out = Array(bytes[start..<i])
            while i < bytes.count {
                let b = bytes[i]
                i += 1
                switch b {
                case UInt8(ascii: "\""):
                    return String(validating: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard i < bytes.count else { return nil }
                    let e = bytes[i]
                    i += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0c)
                    case UInt8(ascii: "n"): out.append(0x0a)
                    case UInt8(ascii: "r"): out.append(0x0d)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var scalar = hex4() else { return nil }
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard literal("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let u = Unicode.Scalar(scalar) else { return nil }
                        // Straight into the buffer: a String and an Array per escape made escapes the parser's
                        // costliest bytes (a message of them took 4× a typical attestation's whole decision).
                        UTF8.encode(u) { out.append($0) }
                    default: return nil
                    }
                case 0..<0x20:
                    return nil
                default:
                    out.append(b)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard bytes.count - i >= 4 else { return nil }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[i]
                i += 1
                let d: UInt8
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
                default: return nil
                }
                v = v << 4 | UInt32(d)
            }
            return v
        }
    }
}
