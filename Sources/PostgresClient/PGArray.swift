import Glibc

/// A one-dimensional array parameter in PostgreSQL's binary format: a batch's rows travel as parallel
/// arrays (`unnest($1::text[], $2::int8[], …)`), each element as it is, with no quoting, escaping or
/// parsing on either side.
public struct PGArray: Sendable, Equatable {
    /// The array type's OID (`text[]`, `int8[]`, …).
    let arrayType: UInt32
    /// The `array_send` encoding.
    let encoded: [UInt8]
    /// A text element holds U+0000, which PostgreSQL text cannot store; the parameter is refused.
    private(set) var containsNUL = false

    /// The element type's OID and the array type's, as in `pg_type`.
    private enum Element {
        static let bool: (UInt32, UInt32) = (16, 1000)
        static let bytea: (UInt32, UInt32) = (17, 1001)
        static let int4: (UInt32, UInt32) = (23, 1007)
        static let text: (UInt32, UInt32) = (25, 1009)
        static let int8: (UInt32, UInt32) = (20, 1016)
        static let timestamptz: (UInt32, UInt32) = (1184, 1185)
    }

    /// Generic over the collection so that an array without nils is read as it is: converting `[E]` to
    /// `[E?]` in a caller generic over `E` casts each element at run time.
    private init<C: Collection, E>(_ types: (element: UInt32, array: UInt32), _ elements: C, encode: (E, inout [UInt8]) -> Void)
    where C.Element == E? {
        var out = [UInt8]()
        out.reserveCapacity(20 + elements.count * 12)
        Self.append(Int32(elements.isEmpty ? 0 : 1), to: &out)
        Self.append(Int32(elements.contains { $0 == nil } ? 1 : 0), to: &out)
        Self.append(Int32(bitPattern: types.element), to: &out)
        if !elements.isEmpty {
            Self.append(Int32(elements.count), to: &out)
            Self.append(Int32(1), to: &out)  // lower bound
        }
        for element in elements {
            guard let element else {
                Self.append(Int32(-1), to: &out)
                continue
            }
            let lengthAt = out.count
            Self.append(Int32(0), to: &out)
            encode(element, &out)
            let length = UInt32(out.count - lengthAt - 4)
            for i in 0..<4 { out[lengthAt + i] = UInt8(truncatingIfNeeded: length >> (24 - 8 * i)) }
        }
        arrayType = types.array
        encoded = out
    }

    private static func append<I: FixedWidthInteger>(_ value: I, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }

    public static func text(_ elements: [String?]) -> PGArray { text(of: elements) }
    public static func text(_ elements: [String]) -> PGArray { text(of: elements.lazy.map(Optional.some)) }

    private static func text<C: Collection>(of elements: C) -> PGArray where C.Element == String? {
        var nul = false
        // Through the text's contiguous UTF-8, copied and searched for NUL at once (`memchr`): appending its
        // `utf8` view and scanning the copy byte by byte cost about a thousand instructions an element.
        var array = PGArray(Element.text, elements) { text, out in
            var text = text
            text.withUTF8 { bytes in
                out.append(contentsOf: bytes)
                if !nul, let base = bytes.baseAddress { nul = memchr(base, 0, bytes.count) != nil }
            }
        }
        array.containsNUL = nul
        return array
    }

    public static func int8(_ elements: [Int64?]) -> PGArray { int8(of: elements) }
    public static func int8(_ elements: [Int64]) -> PGArray { int8(of: elements.lazy.map(Optional.some)) }

    static func int8<C: Collection>(of elements: C) -> PGArray where C.Element == Int64? {
        PGArray(Element.int8, elements) { append($0, to: &$1) }
    }

    public static func int4(_ elements: [Int32?]) -> PGArray { int4(of: elements) }
    public static func int4(_ elements: [Int32]) -> PGArray { int4(of: elements.lazy.map(Optional.some)) }

    private static func int4<C: Collection>(of elements: C) -> PGArray where C.Element == Int32? {
        PGArray(Element.int4, elements) { append($0, to: &$1) }
    }

    public static func bool(_ elements: [Bool?]) -> PGArray { bool(of: elements) }
    public static func bool(_ elements: [Bool]) -> PGArray { bool(of: elements.lazy.map(Optional.some)) }

    private static func bool<C: Collection>(of elements: C) -> PGArray where C.Element == Bool? {
        PGArray(Element.bool, elements) { $1.append($0 ? 1 : 0) }
    }

    public static func bytea(_ elements: [[UInt8]?]) -> PGArray { bytea(of: elements) }
    public static func bytea(_ elements: [[UInt8]]) -> PGArray { bytea(of: elements.lazy.map(Optional.some)) }

    private static func bytea<C: Collection>(of elements: C) -> PGArray where C.Element == [UInt8]? {
        PGArray(Element.bytea, elements) { $1.append(contentsOf: $0) }
    }

    /// Instants as microseconds since the Unix epoch (sent as PostgreSQL's microseconds since 2000-01-01).
    public static func timestamptz(unixMicroseconds elements: [Int64?]) -> PGArray {
        PGArray(Element.timestamptz, elements) { append($0 - postgresEpochOffset, to: &$1) }
    }

    /// PostgreSQL's binary timestamps count from 2000-01-01; this many microseconds after the Unix epoch.
    static let postgresEpochOffset: Int64 = 946_684_800_000_000
}
