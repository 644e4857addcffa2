/// A strict, bounded CBOR decoder: definite lengths only, minimal (preferred) heads, unique map keys,
/// valid UTF-8 text, a nesting limit, and lengths checked against the bytes left before anything is
/// allocated, so no input can make it crash, hang or allocate more than a small multiple of its size.
public struct CBORDecoder: Sendable {
    /// Arrays, maps and tags deeper than this are rejected (CONTRACT 7: 16).
    public var maxDepth: Int

    public init(maxDepth: Int = 16) {
        self.maxDepth = maxDepth
    }

    /// Decodes exactly one item that spans all of `bytes`; anything after it is `trailingData`.
    public func decode(_ bytes: [UInt8]) throws(CBORError) -> CBORValue {
        var cursor = Cursor(bytes: bytes, position: 0, maxDepth: maxDepth)
        let value = try cursor.item(depth: 0)
        if cursor.position != bytes.count { throw CBORError(.trailingData, at: cursor.position) }
        return value
    }

    /// Decodes an object that must be exactly one CBOR map (attestation and assertion objects).
    public func decodeMap(_ bytes: [UInt8]) throws(CBORError) -> CBORValue {
        let value = try decode(bytes)
        guard case .map = value else { throw CBORError(.notAMap, at: 0) }
        return value
    }

    /// Decodes one item starting at `offset` and returns it with the offset just past it.
    public func decodePrefix(_ bytes: [UInt8], from offset: Int) throws(CBORError) -> (CBORValue, end: Int) {
        var cursor = Cursor(bytes: bytes, position: offset, maxDepth: maxDepth)
        let value = try cursor.item(depth: 0)
        return (value, cursor.position)
    }
}

private struct Cursor {
    /// Maps with at most this many keys find duplicates by comparison (at most 28 of them), larger ones by a set.
    static let linearKeyCheckLimit = 8

    let bytes: [UInt8]
    var position: Int
    let maxDepth: Int

    var remaining: Int { bytes.count - position }

    mutating func byte() throws(CBORError) -> UInt8 {
        guard position < bytes.count else { throw CBORError(.truncated, at: position) }
        defer { position += 1 }
        return bytes[position]
    }

    /// Reads the argument of a head with additional information `info`, rejecting non-minimal forms.
    mutating func argument(_ info: UInt8, headAt start: Int) throws(CBORError) -> UInt64 {
        switch info {
        case 0..<24:
            return UInt64(info)
        case 24...27:
            let width = 1 << Int(info - 24)
            guard remaining >= width else { throw CBORError(.truncated, at: position) }
            var value: UInt64 = 0
            for _ in 0..<width { value = value << 8 | UInt64(bytes[position]); position += 1 }
            let minimum: UInt64 = [24, 0x100, 0x1_0000, 0x1_0000_0000][Int(info - 24)]
            if value < minimum { throw CBORError(.nonMinimalHead, at: start) }
            return value
        case 31:
            throw CBORError(.indefiniteLength, at: start)
        default:
            throw CBORError(.reservedValue, at: start)
        }
    }

    /// A length that must fit in the bytes left (each element of a container takes at least one byte).
    mutating func length(_ info: UInt8, headAt start: Int, minimumBytesEach: Int) throws(CBORError) -> Int {
        let n = try argument(info, headAt: start)
        guard n <= UInt64(remaining / minimumBytesEach) else { throw CBORError(.truncated, at: position) }
        return Int(n)
    }

    mutating func item(depth: Int) throws(CBORError) -> CBORValue {
        let start = position
        let initial = try byte()
        let major = initial >> 5
        let info = initial & 0x1f
        switch major {
        case 0:
            return .unsigned(try argument(info, headAt: start))
        case 1:
            return .negative(try argument(info, headAt: start))
        case 2:
            let n = try length(info, headAt: start, minimumBytesEach: 1)
            defer { position += n }
            return .bytes(Array(bytes[position..<position + n]))
        case 3:
            let n = try length(info, headAt: start, minimumBytesEach: 1)
            guard let text = String(validating: bytes[position..<position + n], as: UTF8.self) else {
                throw CBORError(.invalidUTF8, at: position)
            }
            position += n
            return .text(text)
        case 4:
            guard depth < maxDepth else { throw CBORError(.tooDeep, at: start) }
            let n = try length(info, headAt: start, minimumBytesEach: 1)
            var items = [CBORValue]()
            items.reserveCapacity(n)
            for _ in 0..<n { items.append(try item(depth: depth + 1)) }
            return .array(items)
        case 5:
            guard depth < maxDepth else { throw CBORError(.tooDeep, at: start) }
            let n = try length(info, headAt: start, minimumBytesEach: 2)
            var entries = [CBORMapEntry]()
            entries.reserveCapacity(n)
            // A set, not a list, past a few keys: a 64 KiB map holds 16,000 keys, and comparing each with all
            // before it took 0.3 s per object (ops/fuzz; CBORFuzzRegressionTests). Below that, comparing with
            // the earlier keys costs less than hashing (App Attest's maps have two to four keys).
            var earlierKeys = [Range<Int>]()
            var keyEncodings = Set<ArraySlice<UInt8>>()
            for _ in 0..<n {
                let keyStart = position
                let key = try item(depth: depth + 1)
                // Minimal heads make equal keys byte-identical, so comparing encodings finds duplicates.
                let encoding = keyStart..<position
                if n <= Self.linearKeyCheckLimit {
                    if earlierKeys.contains(where: { bytes[$0].elementsEqual(bytes[encoding]) }) {
                        throw CBORError(.duplicateKey, at: keyStart)
                    }
                    earlierKeys.append(encoding)
                } else if !keyEncodings.insert(bytes[encoding]).inserted {
                    throw CBORError(.duplicateKey, at: keyStart)
                }
                entries.append(CBORMapEntry(key: key, value: try item(depth: depth + 1)))
            }
            return .map(entries)
        case 6:
            guard depth < maxDepth else { throw CBORError(.tooDeep, at: start) }
            let tag = try argument(info, headAt: start)
            return .tagged(tag, try item(depth: depth + 1))
        default:
            return try simpleOrFloat(info, headAt: start)
        }
    }

    mutating func simpleOrFloat(_ info: UInt8, headAt start: Int) throws(CBORError) -> CBORValue {
        switch info {
        case 20: return .bool(false)
        case 21: return .bool(true)
        case 22: return .null
        case 23: return .undefined
        case 0..<20: return .simple(info)
        case 24:
            let value = try byte()
            // Simple values below 32 must use the one-byte head (RFC 8949 §3.3).
            guard value >= 32 else { throw CBORError(.nonMinimalHead, at: start) }
            return .simple(value)
        case 25:
            guard remaining >= 2 else { throw CBORError(.truncated, at: position) }
            let bits = UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
            position += 2
            return .float(Double(Float16Bits.decode(bits)))
        case 26:
            guard remaining >= 4 else { throw CBORError(.truncated, at: position) }
            var bits: UInt32 = 0
            for _ in 0..<4 { bits = bits << 8 | UInt32(bytes[position]); position += 1 }
            return .float(Double(Float(bitPattern: bits)))
        case 27:
            guard remaining >= 8 else { throw CBORError(.truncated, at: position) }
            var bits: UInt64 = 0
            for _ in 0..<8 { bits = bits << 8 | UInt64(bytes[position]); position += 1 }
            return .float(Double(bitPattern: bits))
        case 31:
            throw CBORError(.indefiniteLength, at: start)
        default:
            throw CBORError(.reservedValue, at: start)
        }
    }
}

/// IEEE 754 half precision, decoded by hand because Float16 is unavailable on some platforms.
private enum Float16Bits {
    static func decode(_ bits: UInt16) -> Double {
        let sign: Double = bits & 0x8000 != 0 ? -1 : 1
        let exponent = Int(bits >> 10 & 0x1f)
        let fraction = Double(bits & 0x3ff)
        switch exponent {
        case 0: return sign * fraction * 0x1p-24
        case 31: return fraction == 0 ? sign * .infinity : .nan
        default: return sign * (1 + fraction / 1024) * Double(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }
}
