/// The pieces of the Prometheus text exposition format 0.0.4 that the metric types share: name rules,
/// escaping and number formatting.
enum PrometheusText {
    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`
    static func isValidMetricName(_ name: String) -> Bool {
        guard let first = name.utf8.first, isLetterOrUnderscore(first) || first == UInt8(ascii: ":") else {
            return false
        }
        return name.utf8.allSatisfy { isLetterOrUnderscore($0) || isDigit($0) || $0 == UInt8(ascii: ":") }
    }

    /// `[a-zA-Z_][a-zA-Z0-9_]*`, and not `__…` (reserved for Prometheus itself).
    static func isValidLabelName(_ name: String) -> Bool {
        guard let first = name.utf8.first, isLetterOrUnderscore(first), !name.hasPrefix("__") else { return false }
        return name.utf8.allSatisfy { isLetterOrUnderscore($0) || isDigit($0) }
    }

    private static func isLetterOrUnderscore(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || byte == UInt8(ascii: "_")
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// HELP text: backslash and line feed escaped.
    static func escapeHelp(_ text: String) -> String {
        guard text.contains(where: { $0 == "\\" || $0 == "\n" }) else { return text }
        var escaped = ""
        for character in text.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// Label values: backslash, double quote and line feed escaped.
    static func escapeLabelValue(_ value: String) -> String {
        guard value.contains(where: { $0 == "\\" || $0 == "\n" || $0 == "\"" }) else { return value }
        var escaped = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// `{a="x",b="y"}`, or nothing without labels; `extra` (the histogram's `le`) goes last.
    static func labelSet(_ names: [String], _ values: [String], extra: (String, String)? = nil) -> String {
        var pairs = zip(names, values).map { "\($0)=\"\(escapeLabelValue($1))\"" }
        if let extra { pairs.append("\(extra.0)=\"\(escapeLabelValue(extra.1))\"") }
        return pairs.isEmpty ? "" : "{" + pairs.joined(separator: ",") + "}"
    }

    /// Integers without a fraction, other values in Swift's shortest round-trip form (`0.005`, `1e-06`),
    /// and `+Inf`, `-Inf`, `NaN`: all accepted by Go's ParseFloat, which Prometheus uses.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    static func header(into text: inout String, name: String, help: String, type: String) {
        text += "# HELP \(name) \(escapeHelp(help))\n"
        text += "# TYPE \(name) \(type)\n"
    }
}
