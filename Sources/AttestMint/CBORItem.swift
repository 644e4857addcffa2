/// A CBOR data item to encode, with definite lengths and minimal heads.
///
/// Test support needs Apple's exact shapes and deliberately broken ones alike, so maps keep their entries in the
/// order given (duplicate keys are allowed) and `.raw` splices arbitrary bytes where an item would go (a
/// non-minimal head, an indefinite length, a truncated item...). Trailing bytes are made by appending to `encoded`.
public indirect enum CBORItem: Sendable {
    /// Major type 0.
    case unsigned(UInt64)
    /// Major type 1 with argument `n`, i.e. the integer -1 - n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBORItem])
    /// Entries in encoding order; keys are not sorted or deduplicated.
    case map([(key: CBORItem, value: CBORItem)])
    /// Bytes copied verbatim into the encoding.
    case raw([UInt8])

    /// The signed integer `value` as major type 0 or 1.
    public static func int(_ value: Int64) -> CBORItem {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-1 - value))
    }

    /// The encoding of this item.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    private func encode(into out: inout [UInt8]) {
        switch self {
        case .unsigned(let value):
            Self.appendHead(major: 0, argument: value, to: &out)
        case .negative(let value):
            Self.appendHead(major: 1, argument: value, to: &out)
        case .bytes(let bytes):
            Self.appendHead(major: 2, argument: UInt64(bytes.count), to: &out)
            out += bytes
        case .text(let text):
            let utf8 = Array(text.utf8)
            Self.appendHead(major: 3, argument: UInt64(utf8.count), to: &out)
            out += utf8
        case .array(let items):
            Self.appendHead(major: 4, argument: UInt64(items.count), to: &out)
            for item in items { item.encode(into: &out) }
        case .map(let entries):
            Self.appendHead(major: 5, argument: UInt64(entries.count), to: &out)
            for entry in entries {
                entry.key.encode(into: &out)
                entry.value.encode(into: &out)
            }
        case .raw(let bytes):
            out += bytes
        }
    }

    /// The shortest head for `argument` (RFC 8949 preferred serialization).
    private static func appendHead(major: UInt8, argument: UInt64, to out: inout [UInt8]) {
        let type = major << 5
        switch argument {
        case 0..<24:
            out.append(type | UInt8(argument))
        case 24...0xFF:
            out += [type | 24, UInt8(argument)]
        case 0x100...0xFFFF:
            out.append(type | 25)
            out += bigEndian(argument, bytes: 2)
        case 0x1_0000...0xFFFF_FFFF:
            out.append(type | 26)
            out += bigEndian(argument, bytes: 4)
        default:
            out.append(type | 27)
            out += bigEndian(argument, bytes: 8)
        }
    }
}

extension CBORItem: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    public init(stringLiteral value: String) {
        self = .text(value)
    }

    public init(integerLiteral value: Int64) {
        self = .int(value)
    }
}

/// The low `bytes` bytes of `value`, most significant first (CBOR heads, counters, lengths).
func bigEndian(_ value: UInt64, bytes: Int) -> [UInt8] {
    (0..<bytes).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
}
