/// One statement's SQL with its values, written as one string: `"… WHERE team_id = \(teamId)"`.
///
/// Literal text is SQL; each interpolated value becomes the next placeholder (`$1`, `$2`, …) and is bound
/// to it, so a value is never spliced into the text and no placeholder is numbered by hand. Casts stay in
/// the text (`\(teams)::text[]`). A value interpolated twice is bound twice. A statement type's text is the
/// same on every run (only the values differ), so the connection prepares it once.
public struct PGQuery: Sendable, ExpressibleByStringInterpolation {
    /// The text between the placeholders: one more than there are values.
    private var literals: [String]
    /// The values bound to `$1…`, in order.
    public private(set) var binds: [PGValue]

    /// The SQL as sent, placeholders numbered. Built for every statement of every batch: as bytes, decoded
    /// once, since appending to a `String` piece by piece cost several instructions a byte.
    public var sql: String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(literals.reduce(0) { $0 + $1.utf8.count } + 8 * binds.count)
        bytes += literals[0].utf8
        for index in literals.indices.dropFirst() {
            bytes.append(UInt8(ascii: "$"))
            bytes += String(index).utf8
            bytes += literals[index].utf8
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public init(stringLiteral sql: String) {
        literals = [sql]
        binds = []
    }

    public init(stringInterpolation: StringInterpolation) {
        self = stringInterpolation.query
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        fileprivate var query = PGQuery(stringLiteral: "")

        public init(literalCapacity: Int, interpolationCount: Int) {
            query.literals[0].reserveCapacity(literalCapacity)
            query.binds.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            query.literals[query.literals.count - 1] += literal
        }

        /// Binds `value` to the next placeholder.
        public mutating func appendInterpolation<Value: PGEncodable>(_ value: Value) {
            query.binds.append(value.pgValue)
            query.literals.append("")
        }

        /// Binds `value`, or NULL when it is nil.
        public mutating func appendInterpolation<Value: PGEncodable>(_ value: Value?) {
            appendInterpolation(value?.pgValue ?? .null)
        }

        /// Binds `elements` as one array parameter (`unnest(\(ids)::int8[])`), NULL where an element is nil.
        public mutating func appendInterpolation<Element: PGArrayElement>(_ elements: [Element?]) {
            appendInterpolation(PGValue.array(Element.pgArray(elements)))
        }

        public mutating func appendInterpolation<Element: PGArrayElement>(_ elements: [Element]) {
            appendInterpolation(PGValue.array(Element.pgArray(nonNil: elements)))
        }

        /// Splices a query fragment in: its text, and its values after the ones bound so far.
        public mutating func appendInterpolation(_ fragment: PGQuery) {
            appendLiteral(fragment.literals[0])
            for (value, literal) in zip(fragment.binds, fragment.literals.dropFirst()) {
                query.binds.append(value)
                query.literals.append(literal)
            }
        }

        /// Splices SQL text fixed in the code (a constant's raw value in a string literal, a column list),
        /// as is. Never for anything that came from input.
        public mutating func appendInterpolation(unescaped sql: String) {
            appendLiteral(sql)
        }
    }
}

/// A Swift value bound to a statement parameter through ``PGQuery`` interpolation.
public protocol PGEncodable: Sendable {
    var pgValue: PGValue { get }
}

extension PGValue: PGEncodable {
    public var pgValue: PGValue { self }
}

extension String: PGEncodable {
    public var pgValue: PGValue { .text(self) }
}

extension Int64: PGEncodable {
    public var pgValue: PGValue { .int(self) }
}

extension Int: PGEncodable {
    public var pgValue: PGValue { .int(Int64(self)) }
}

extension Int32: PGEncodable {
    public var pgValue: PGValue { .int(Int64(self)) }
}

extension Bool: PGEncodable {
    public var pgValue: PGValue { .bool(self) }
}

/// Bytes are `bytea`.
extension Array: PGEncodable where Element == UInt8 {
    public var pgValue: PGValue { .bytes(self) }
}

/// A type whose arrays bind as one PostgreSQL array parameter. An array without nils has its own
/// requirement: passing it as `[Self?]` from code generic over the element converts it element by element
/// through a run-time cast.
public protocol PGArrayElement: Sendable {
    static func pgArray(_ elements: [Self?]) -> PGArray
    static func pgArray(nonNil elements: [Self]) -> PGArray
}

extension String: PGArrayElement {
    public static func pgArray(_ elements: [String?]) -> PGArray { .text(elements) }
    public static func pgArray(nonNil elements: [String]) -> PGArray { .text(elements) }
}

extension Int64: PGArrayElement {
    public static func pgArray(_ elements: [Int64?]) -> PGArray { .int8(elements) }
    public static func pgArray(nonNil elements: [Int64]) -> PGArray { .int8(elements) }
}

extension Int: PGArrayElement {
    public static func pgArray(_ elements: [Int?]) -> PGArray { .int8(of: elements.lazy.map { $0.map(Int64.init) }) }
    public static func pgArray(nonNil elements: [Int]) -> PGArray { .int8(of: elements.lazy.map { Optional(Int64($0)) }) }
}

extension Int32: PGArrayElement {
    public static func pgArray(_ elements: [Int32?]) -> PGArray { .int4(elements) }
    public static func pgArray(nonNil elements: [Int32]) -> PGArray { .int4(elements) }
}

extension Bool: PGArrayElement {
    public static func pgArray(_ elements: [Bool?]) -> PGArray { .bool(elements) }
    public static func pgArray(nonNil elements: [Bool]) -> PGArray { .bool(elements) }
}

extension Array: PGArrayElement where Element == UInt8 {
    public static func pgArray(_ elements: [[UInt8]?]) -> PGArray { .bytea(elements) }
    public static func pgArray(nonNil elements: [[UInt8]]) -> PGArray { .bytea(elements) }
}
