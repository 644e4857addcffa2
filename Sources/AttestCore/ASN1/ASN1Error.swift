/// Why bytes are not the expected DER (or BER) structure. The offset is for diagnostics only.
public struct ASN1Error: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case truncated
        case invalidLength = "invalid_length"
        case indefiniteLength = "indefinite_length"
        case unexpectedTag = "unexpected_tag"
        case invalidValue = "invalid_value"
        case tooDeep = "too_deep"
        case trailingData = "trailing_data"
    }

    public var kind: Kind
    public var offset: Int

    public init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    public var description: String { "ASN.1 \(kind.rawValue) at byte \(offset)" }
}
