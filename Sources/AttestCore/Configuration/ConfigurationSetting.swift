/// One setting of `attest-worker run` (an `ATTEST_*` name in the environment or the configuration file):
/// its default, the values it accepts, whether it holds a secret, and what it does. The worker's list of
/// these (`WorkerConfiguration.settings`) is what `run --help` prints, what the configuration is validated
/// against (numeric bounds are read from here), and what docs/CONFIGURATION.md is generated from
/// (`attest-worker run --help-markdown`).
public struct ConfigurationSetting: Sendable {
    /// The values a setting accepts.
    public enum Allowed: Sendable, Equatable {
        /// A whole number in `min...max`.
        case integer(Int, Int)
        /// A duration in seconds within `min...max`: whole seconds, or a whole number with `s`, `m`, `h` or `d`.
        case duration(Int64, Int64)
        /// `true`/`false` (also `1`/`0`, `yes`/`no`).
        case boolean
        /// Exactly one of these words.
        case oneOf([String])
        /// Anything the description says (a format, a list, a path).
        case text(String)
    }

    public let name: String
    /// nil: required (no default); empty: unset by default.
    public let defaultValue: String?
    public let allowed: Allowed
    /// Redacted in the start log (a password, a key, a shared secret).
    public let secret: Bool
    /// What it does, in one or two sentences (Markdown).
    public let summary: String

    public init(_ name: String, _ defaultValue: String?, _ allowed: Allowed, secret: Bool = false, _ summary: String) {
        self.name = name
        self.defaultValue = defaultValue
        self.allowed = allowed
        self.secret = secret
        self.summary = summary
    }

    /// The bounds of an `.integer` setting (a programming error for any other).
    public var integerBounds: ClosedRange<Int> {
        guard case .integer(let min, let max) = allowed else { preconditionFailure("\(name) is not a whole number") }
        return min...max
    }

    /// The bounds of a `.duration` setting in seconds (a programming error for any other).
    public var durationBounds: ClosedRange<Int64> {
        guard case .duration(let min, let max) = allowed else { preconditionFailure("\(name) is not a duration") }
        return min...max
    }

    /// The accepted values as the reference table prints them.
    public var allowedText: String {
        switch allowed {
        case .integer(let min, let max): return "\(Self.grouped(Int64(min))) to \(Self.grouped(Int64(max)))"
        case .duration(let min, let max):
            return "\(Self.durationText(min)) to \(Self.durationText(max)) (seconds, or with s, m, h, d)"
        case .boolean: return "true or false"
        case .oneOf(let words): return words.map { "`\($0)`" }.joined(separator: ", ")
        case .text(let text): return text
        }
    }

    /// 1000000 as 1,000,000.
    public static func grouped(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return value < 0 ? "-" + out : out
    }

    /// Seconds in the largest unit that divides them: 10 s, 31 d.
    static func durationText(_ seconds: Int64) -> String {
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60)] where seconds >= size && seconds % size == 0 {
            return "\(grouped(seconds / size)) \(unit)"
        }
        return "\(grouped(seconds)) s"
    }
}
