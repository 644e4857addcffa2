import Foundation

/// PEM armour for certificates and keys: 64-character lines with "\n" (Foundation's line breaking uses "\r\n").
enum PEM {
    static func encode(_ der: [UInt8], label: String) -> String {
        let base64 = Data(der).base64EncodedString()
        var lines = ["-----BEGIN \(label)-----"]
        var start = base64.startIndex
        while start < base64.endIndex {
            let end = base64.index(start, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(String(base64[start..<end]))
            start = end
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The blocks of `text` in order; text outside blocks is ignored, as OpenSSL ignores it.
    static func decode(_ text: String) throws(MintError) -> [(label: String, der: [UInt8])] {
        var blocks: [(label: String, der: [UInt8])] = []
        var current: (label: String, body: String)?
        for line in text.split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if let open = current {
                if line == "-----END \(open.label)-----" {
                    guard let data = Data(base64Encoded: open.body) else { throw MintError("bad base64 in PEM block \(open.label)") }
                    blocks.append((open.label, Array(data)))
                    current = nil
                } else {
                    current = (open.label, open.body + line)
                }
            } else if line.hasPrefix("-----BEGIN "), line.hasSuffix("-----") {
                current = (String(line.dropFirst(11).dropLast(5)), "")
            }
        }
        guard current == nil else { throw MintError("unterminated PEM block \(current!.label)") }
        return blocks
    }
}
