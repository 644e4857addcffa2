/// One decoded CBOR data item (RFC 8949). Only what a strict decoder of definite-length items can produce.
/// Only a tag's content is boxed (arrays and maps already live in their own buffers), so a decoded scalar
/// costs no allocation of its own.
public enum CBORValue: Sendable, Equatable {
    case unsigned(UInt64)
    /// The negative integer -1 - n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBORValue])
    /// Entries in encoded order; keys are unique (the decoder rejects duplicates).
    case map([CBORMapEntry])
    indirect case tagged(UInt64, CBORValue)
    case bool(Bool)
    case null
    case undefined
    case simple(UInt8)
    case float(Double)

    /// The value stored under `key` when this is a map.
    public subscript(key: CBORValue) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == key }?.value
    }

    public subscript(key: String) -> CBORValue? { self[.text(key)] }

    public subscript(key: Int) -> CBORValue? { self[CBORValue(key)] }

    /// An integer as a CBOR value (negative numbers use the -1 - n form).
    public init(_ integer: Int) {
        self = integer >= 0 ? .unsigned(UInt64(integer)) : .negative(UInt64(-1 - integer))
    }

    public var bytesValue: [UInt8]? {
        if case .bytes(let b) = self { return b }
        return nil
    }

    public var textValue: String? {
        if case .text(let t) = self { return t }
        return nil
    }

    /// The value as a Swift Int, when it is an integer that fits.
    public var intValue: Int? {
        switch self {
        case .unsigned(let n): return Int(exactly: n)
        case .negative(let n): return Int(exactly: n).map { -1 - $0 }
        default: return nil
        }
    }
}

/// A key/value pair of a CBOR map.
public struct CBORMapEntry: Sendable, Equatable {
    public var key: CBORValue
    public var value: CBORValue

    public init(key: CBORValue, value: CBORValue) {
        self.key = key
        self.value = value
    }
}
