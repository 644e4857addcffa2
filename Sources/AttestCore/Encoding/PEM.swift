/// PEM text → DER blocks (RFC 7468, strict base64 body).
public enum PEM {
    /// Every `-----BEGIN label-----` block in `text`, decoded; nil when a block is malformed.
    public static func decodeAll(_ text: String, label: String = "CERTIFICATE") -> [[UInt8]]? {
        blocks(in: text, label: label)?.map(\.der)
    }

    /// The blocks of `text` in order with their labels, or only those labelled `label` (other armour lines are
    /// then plain text); text outside blocks is ignored. Nil when a block is malformed.
    public static func blocks(in text: String, label: String? = nil) -> [(label: String, der: [UInt8])]? {
        var blocks = [(label: String, der: [UInt8])]()
        var open: (label: String, body: String)? = nil
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingWhitespace()
            if let block = open, line == "-----END \(block.label)-----" {
                guard let der = Base64.decode(block.body) else { return nil }
                blocks.append((block.label, der))
                open = nil
            } else if let begin = armourLabel(line, "BEGIN"), label == nil || begin == label {
                guard open == nil else { return nil }
                open = (begin, "")
            } else if open != nil {
                open!.body += line
            } else if let end = armourLabel(line, "END"), label == nil || end == label {
                return nil
            }
        }
        return open == nil ? blocks : nil
    }

    public static func encode(_ der: [UInt8], label: String = "CERTIFICATE") -> String {
        let b64 = Array(Base64.encode(der))
        var text = "-----BEGIN \(label)-----\n"
        for start in stride(from: 0, to: b64.count, by: 64) {
            text += String(b64[start..<min(start + 64, b64.count)]) + "\n"
        }
        return text + "-----END \(label)-----\n"
    }

    /// The label of a `-----BEGIN label-----` or `-----END label-----` line (per `marker`).
    private static func armourLabel(_ line: String, _ marker: String) -> String? {
        let prefix = "-----\(marker) "
        guard line.count >= prefix.count + 5, line.hasPrefix(prefix), line.hasSuffix("-----") else { return nil }
        return String(line.dropFirst(prefix.count).dropLast(5))
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> String {
        String(self.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
