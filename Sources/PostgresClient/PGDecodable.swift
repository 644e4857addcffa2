internal import CLibPQ

/// A column's type, by its `pg_type` OID: what a ``PGDecodable`` checks before reading a value, so a
/// statement whose SQL returns another type than its row expects fails loudly instead of parsing
/// whatever the text happens to be.
public struct PGType: Hashable, Sendable, CustomStringConvertible {
    public let oid: UInt32
    public init(oid: UInt32) { self.oid = oid }
    public var description: String { Self.names[oid] ?? "type \(oid)" }

    // pg_type.h is a server header, so the OIDs are spelled out here.
    public static let bool = PGType(oid: 16)
    public static let bytea = PGType(oid: 17)
    public static let name = PGType(oid: 19)
    public static let int8 = PGType(oid: 20)
    public static let int2 = PGType(oid: 21)
    public static let int4 = PGType(oid: 23)
    public static let text = PGType(oid: 25)
    public static let oid = PGType(oid: 26)
    public static let json = PGType(oid: 114)
    public static let unknown = PGType(oid: 705)
    public static let bpchar = PGType(oid: 1042)
    public static let varchar = PGType(oid: 1043)
    public static let jsonb = PGType(oid: 3802)

    private static let names: [UInt32: String] = [
        16: "bool", 17: "bytea", 19: "name", 20: "int8", 21: "int2", 23: "int4", 25: "text", 26: "oid", 114: "json",
        705: "unknown", 1042: "bpchar", 1043: "varchar", 3802: "jsonb",
    ]
}

/// A Swift type one column decodes into, from the value's text form (results travel in text format).
///
/// Conformances check the column's type first: `Int64` reads integer columns only, `String` textual
/// ones, so `SELECT count(*)` read as a `String` or a `text` column read as an `Int64` is an error, not a
/// value. NULL never reaches `init`: ``PGRow/decode(_:)`` answers it (an error, or nil for an optional).
public protocol PGDecodable: Sendable {
    /// Nil when `type` is not one this Swift type holds, or `text` is not a value of it.
    init?(pgText text: String, type: PGType)
}

extension String: PGDecodable {
    /// Textual types only; `json` and `jsonb` count, since their text is the document.
    public init?(pgText text: String, type: PGType) {
        guard [.text, .varchar, .bpchar, .name, .unknown, .json, .jsonb].contains(type) else { return nil }
        self = text
    }
}

extension Int64: PGDecodable {
    public init?(pgText text: String, type: PGType) {
        guard [.int8, .int4, .int2, .oid].contains(type), let value = Int64(text) else { return nil }
        self = value
    }
}

extension Int: PGDecodable {
    public init?(pgText text: String, type: PGType) {
        guard let wide = Int64(pgText: text, type: type), let value = Int(exactly: wide) else { return nil }
        self = value
    }
}

extension Int32: PGDecodable {
    /// A value beyond 32 bits is refused, never narrowed.
    public init?(pgText text: String, type: PGType) {
        guard let wide = Int64(pgText: text, type: type), let value = Int32(exactly: wide) else { return nil }
        self = value
    }
}

extension Bool: PGDecodable {
    public init?(pgText text: String, type: PGType) {
        guard type == .bool else { return nil }
        switch text {
        case "t": self = true
        case "f": self = false
        default: return nil
        }
    }
}

extension Array: PGDecodable where Element == UInt8 {
    /// `bytea` only, decoded from its text form (hex, or the older escape format).
    public init?(pgText text: String, type: PGType) {
        guard type == .bytea else { return nil }
        var length = 0
        guard let decoded = text.withCString({ PQunescapeBytea(UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self), &length) })
        else { return nil }
        defer { PQfreemem(decoded) }
        self = Array(UnsafeBufferPointer(start: decoded, count: length))
    }
}

extension PGDecodable where Self: RawRepresentable, RawValue == String {
    /// A string enum from its raw value: a text the enum has no case for is a type mismatch.
    public init?(pgText text: String, type: PGType) {
        guard let raw = String(pgText: text, type: type), let value = Self(rawValue: raw) else { return nil }
        self = value
    }
}
