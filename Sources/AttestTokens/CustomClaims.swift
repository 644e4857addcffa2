import AttestCore

/// An app's custom token claims (`apps.custom_claims`, `app set --claims`): a small JSON object whose members
/// every token of the app carries after the worker's own. Validated once, when set, so a token never depends
/// on what an operator typed: bounded in size, members and depth, and unable to shadow a claim a relying party
/// trusts the worker for.
public struct CustomClaims: Sendable, Equatable {
    /// Tokens travel in HTTP headers; 4 KiB of claims keeps a token well inside common header limits.
    public static let maxSerializedBytes = 4096
    public static let maxMembers = 32
    /// Nesting of the object itself is depth 1; a claim's value may nest three levels more.
    public static let maxDepth = 4

    /// The object, members in the order they were given.
    public let json: JSONValue

    /// No custom claims: what an app registered without any has.
    public init() { json = .object([]) }

    /// Why claims were refused; the description is the operator-facing error.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Validates `json` as claims.
    public init(json: JSONValue) throws(Invalid) {
        guard case .object(let members) = json else { throw Invalid(description: "claims must be a JSON object") }
        guard members.count <= Self.maxMembers else {
            throw Invalid(description: "claims may have at most \(Self.maxMembers) members, not \(members.count)")
        }
        for (name, value) in members {
            guard !name.isEmpty else { throw Invalid(description: "a claim name must not be empty") }
            guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw Invalid(description: "a claim name must not hold control characters (NUL among them)")
            }
            guard !TokenClaims.reserved.contains(name) else {
                throw Invalid(description: "claim \(name) is set by the worker and cannot be a custom claim")
            }
            guard Self.depth(of: value) < Self.maxDepth else {
                throw Invalid(description: "claim \(name) nests deeper than \(Self.maxDepth) levels")
            }
            guard Self.numbersKeep(value) else {
                throw Invalid(
                    description: "claim \(name) holds a number a JSON reader may not keep as written: infinite, or a whole number beyond ±2^53")
            }
        }
        let size = json.serialized().utf8.count
        guard size <= Self.maxSerializedBytes else {
            throw Invalid(description: "claims are \(size) bytes serialized; at most \(Self.maxSerializedBytes) are allowed")
        }
        self.json = json
    }

    /// Parses and validates claims text (strict JSON: duplicate names refused).
    public init(text: String) throws(Invalid) {
        // Whitespace aside, text this long cannot serialize within the limit: refused before parsing it.
        guard text.utf8.count <= 4 * Self.maxSerializedBytes else {
            throw Invalid(description: "claims are \(text.utf8.count) bytes; at most \(Self.maxSerializedBytes) are allowed")
        }
        // One level beyond the limit, so that the depth check can name the claim that nests too deep.
        guard let json = JSONValue.parse(Array(text.utf8), maxDepth: Self.maxDepth + 1) else {
            throw Invalid(
                description: "claims must be strict JSON (no duplicate names) nesting at most \(Self.maxDepth) levels")
        }
        try self.init(json: json)
    }

    /// The members, in order, as the token takes them.
    public var members: [(String, JSONValue)] {
        if case .object(let members) = json { return members }
        return []
    }

    /// Every reader keeps integers within ±2^53 exactly (JavaScript's, PyJWT's through float); a number
    /// beyond that, or one that overflowed to infinity, would reach a relying party as something else.
    static let maxExactInteger: Int64 = 1 << 53

    /// Whether every number in `value` reads back as written.
    private static func numbersKeep(_ value: JSONValue) -> Bool {
        switch value {
        case .int(let n): return n.magnitude <= UInt64(maxExactInteger)
        case .double(let d): return d.isFinite && (d.rounded() != d || d.magnitude <= Double(maxExactInteger))
        case .array(let items): return items.allSatisfy(numbersKeep)
        case .object(let members): return members.allSatisfy { numbersKeep($0.1) }
        default: return true
        }
    }

    /// Levels of arrays and objects in `value`: 0 for a scalar.
    private static func depth(of value: JSONValue) -> Int {
        switch value {
        case .array(let items): return 1 + (items.map(depth).max() ?? 0)
        case .object(let members): return 1 + (members.map { depth(of: $0.1) }.max() ?? 0)
        default: return 0
        }
    }
}
