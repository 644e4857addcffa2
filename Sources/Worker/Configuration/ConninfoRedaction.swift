import AttestCore

/// Passwords removed from a libpq connection string for logs, read the way libpq reads it (fe-connect.c),
/// so that no spelling libpq accepts slips past: a URI's userinfo password and its query parameters,
/// whose names libpq percent-decodes (`?pass%77ord=`); key=value strings with spaces around `=`, single-
/// quoted values holding spaces and backslash-escaped quotes. Any key naming a password counts
/// (`password`, `sslpassword`).
enum ConninfoRedaction {
    static let mask = "***"

    static func redacted(_ conninfo: String) -> String {
        let bytes = Array(conninfo.utf8)
        let isURI = ["postgresql://", "postgres://"].contains { bytes.starts(with: $0.utf8) }
        // Unparsable text is not a connection string libpq would use, and may still hold a password.
        guard let spans = isURI ? uriSecrets(bytes) : keywordSecrets(bytes) else { return "\(mask) (unparsable)" }
        var out = [UInt8]()
        var position = 0
        for span in spans {
            out += bytes[position..<span.lowerBound]
            out += mask.utf8
            position = span.upperBound
        }
        out += bytes[position...]
        return String(decoding: out, as: UTF8.self)
    }

    private static func namesPassword(_ key: [UInt8]) -> Bool {
        String(decoding: key, as: UTF8.self).lowercased().contains("password")
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (0x09...0x0d).contains(b) }

    /// The value ranges of password keywords in `key = value …`, or nil where libpq would fail to parse.
    private static func keywordSecrets(_ b: [UInt8]) -> [Range<Int>]? {
        var spans = [Range<Int>]()
        var i = 0
        while true {
            while i < b.count, isSpace(b[i]) { i += 1 }
            if i == b.count { return spans }
            let nameStart = i
            while i < b.count, b[i] != UInt8(ascii: "="), !isSpace(b[i]) { i += 1 }
            let name = Array(b[nameStart..<i])
            while i < b.count, isSpace(b[i]) { i += 1 }
            guard i < b.count, b[i] == UInt8(ascii: "=") else { return nil }
            i += 1
            while i < b.count, isSpace(b[i]) { i += 1 }
            let valueStart = i
            if i < b.count, b[i] == UInt8(ascii: "'") {
                i += 1
                while true {
                    guard i < b.count else { return nil }  // unterminated quote
                    if b[i] == UInt8(ascii: "\\") {
                        i = min(i + 2, b.count)
                    } else if b[i] == UInt8(ascii: "'") {
                        i += 1
                        break
                    } else {
                        i += 1
                    }
                }
            } else {
                while i < b.count, !isSpace(b[i]) { i = b[i] == UInt8(ascii: "\\") ? min(i + 2, b.count) : i + 1 }
            }
            if namesPassword(name) { spans.append(valueStart..<i) }
        }
    }

    /// The userinfo password and the password query values of a URI, in order.
    private static func uriSecrets(_ b: [UInt8]) -> [Range<Int>]? {
        var spans = [Range<Int>]()
        var i = b.firstIndex(of: UInt8(ascii: "/"))! + 2
        // libpq: the userinfo runs to the first '@' unless a '/' comes first.
        if let at = b[i...].firstIndex(where: { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "/") }), b[at] == UInt8(ascii: "@") {
            if let colon = b[i..<at].firstIndex(of: UInt8(ascii: ":")) { spans.append(colon + 1..<at) }
            i = at + 1
        }
        guard let query = b[i...].firstIndex(of: UInt8(ascii: "?")) else { return spans }
        var start = query + 1
        while start <= b.count {
            let end = b[start...].firstIndex(of: UInt8(ascii: "&")) ?? b.count
            if let equals = b[start..<end].firstIndex(of: UInt8(ascii: "=")) {
                // A name that does not decode is redacted too: libpq would reject it, a log need not show it.
                if percentDecoded(Array(b[start..<equals])).map(namesPassword) ?? true { spans.append(equals + 1..<end) }
            }
            start = end + 1
        }
        return spans
    }

    private static func percentDecoded(_ b: [UInt8]) -> [UInt8]? {
        var out = [UInt8]()
        var i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "%") {
                guard i + 2 < b.count, let byte = Hex.decode(String(decoding: b[i + 1...i + 2], as: UTF8.self)) else { return nil }
                out += byte
                i += 3
            } else {
                out.append(b[i])
                i += 1
            }
        }
        return out
    }
}
