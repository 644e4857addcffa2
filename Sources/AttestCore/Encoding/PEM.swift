/// PEM text → DER blocks of one label (RFC 7468, strict base64 body).
public enum PEM {
    /// Every `-----BEGIN label-----` block in `text`, decoded; nil when a block is malformed.
    public static func decodeAll(_ text: String, label: String = "CERTIFICATE") -> [[UInt8]]? {
        let begin = "-----BEGIN \(label)-----"
        let end = "-----END \(label)-----"
        var blocks = [[UInt8]]()
        var body: String? = nil
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingWhitespace()
            if line == begin {
                guard body == nil else { return nil }
                body = ""
            } else if line == end {
                guard let b = body, let der = Base64.decode(b) else { return nil }
                blocks.append(der)
                body = nil
            } else if body != nil {
                body! += line
            }
        }
        return body == nil ? blocks : nil
    }

    public static func encode(_ der: [UInt8], label: String = "CERTIFICATE") -> String {
        let b64 = Array(Base64.encode(der))
        var text = "-----BEGIN \(label)-----\n"
        for start in stride(from: 0, to: b64.count, by: 64) {
            text += String(b64[start..<min(start + 64, b64.count)]) + "\n"
        }
        return text + "-----END \(label)-----\n"
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> String {
        String(self.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
