/// Why a byte string is not one strict CBOR item. The offset is where decoding stopped, for diagnostics only.
public struct CBORError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case truncated
        case indefiniteLength = "indefinite_length"
        case nonMinimalHead = "non_minimal_head"
        case reservedValue = "reserved_value"
        case duplicateKey = "duplicate_key"
        case tooDeep = "too_deep"
        case tooLarge = "too_large"
        case invalidUTF8 = "invalid_utf8"
        case trailingData = "trailing_data"
        case notAMap = "not_a_map"
    }

    public var kind: Kind
    public var offset: Int

    public init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    public var description: String { "CBOR \(kind.rawValue) at byte \(offset)" }
}
