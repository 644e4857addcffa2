/// Reads a sequence of BER/DER elements from a byte buffer, one level at a time.
///
/// In `.der` mode every length is definite and minimal, as certificates require. `.ber` mode adds what
/// CMS producers such as Apple's receipt service emit: indefinite lengths on constructed elements (found
/// by walking the nested elements to the end-of-contents marker, with a depth limit) and non-minimal
/// lengths. Nothing is copied: elements carry offsets into `bytes`.
public struct ASN1Reader: Sendable {
    public enum Rules: Sendable { case der, ber }

    public let bytes: [UInt8]
    public let rules: Rules
    public private(set) var position: Int
    public let end: Int
    let depth: Int

    /// Nesting deeper than this is rejected when walking BER indefinite lengths.
    public static let maxDepth = 32

    public init(_ bytes: [UInt8], rules: Rules = .der) {
        self.init(bytes, rules: rules, range: 0..<bytes.count, depth: 0)
    }

    init(_ bytes: [UInt8], rules: Rules, range: Range<Int>, depth: Int) {
        self.bytes = bytes
        self.rules = rules
        self.position = range.lowerBound
        self.end = range.upperBound
        self.depth = depth
    }

    public var isAtEnd: Bool { position >= end }

    /// The element at the current position, without consuming it.
    public func peek() throws(ASN1Error) -> ASN1Element {
        var copy = self
        return try copy.next()
    }

    /// Reads the next element.
    public mutating func next() throws(ASN1Error) -> ASN1Element {
        let start = position
        guard position < end else { throw ASN1Error(.truncated, at: position) }
        let first = bytes[position]
        position += 1
        var number = UInt32(first & 0x1f)
        if number == 0x1f {
            // High tag number form: base-128, minimal, fits in 28 bits.
            number = 0
            var count = 0
            while true {
                guard position < end else { throw ASN1Error(.truncated, at: position) }
                let b = bytes[position]
                position += 1
                if count == 0 && b == 0x80 { throw ASN1Error(.invalidValue, at: position - 1) }
                count += 1
                guard count <= 4 else { throw ASN1Error(.invalidValue, at: position - 1) }
                number = number << 7 | UInt32(b & 0x7f)
                if b & 0x80 == 0 { break }
            }
            if number < 0x1f { throw ASN1Error(.invalidValue, at: start) }
        }
        let tag = ASN1Tag(ASN1Tag.TagClass(rawValue: first >> 6)!, constructed: first & 0x20 != 0, number: number)

        guard position < end else { throw ASN1Error(.truncated, at: position) }
        let lengthByte = bytes[position]
        position += 1
        if lengthByte == 0x80 {
            guard rules == .ber else { throw ASN1Error(.indefiniteLength, at: position - 1) }
            guard tag.constructed else { throw ASN1Error(.invalidLength, at: position - 1) }
            guard depth < Self.maxDepth else { throw ASN1Error(.tooDeep, at: start) }
            var inner = ASN1Reader(bytes, rules: rules, range: position..<end, depth: depth + 1)
            while true {
                if inner.end - inner.position >= 2 && bytes[inner.position] == 0 && bytes[inner.position + 1] == 0 {
                    let element = ASN1Element(
                        tag: tag, start: start, contentStart: position, contentEnd: inner.position,
                        end: inner.position + 2, indefinite: true)
                    position = element.end
                    return element
                }
                _ = try inner.next()
            }
        }
        var length = 0
        if lengthByte < 0x80 {
            length = Int(lengthByte)
        } else {
            let count = Int(lengthByte & 0x7f)
            guard count <= 4 else { throw ASN1Error(.invalidLength, at: position - 1) }
            guard end - position >= count else { throw ASN1Error(.truncated, at: position) }
            if rules == .der && bytes[position] == 0 { throw ASN1Error(.invalidLength, at: position) }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[position])
                position += 1
            }
            if rules == .der && length < 0x80 { throw ASN1Error(.invalidLength, at: position - count - 1) }
        }
        guard length <= end - position else { throw ASN1Error(.truncated, at: position) }
        let element = ASN1Element(
            tag: tag, start: start, contentStart: position, contentEnd: position + length,
            end: position + length, indefinite: false)
        position += length
        return element
    }

    /// Reads the next element and requires its tag.
    public mutating func next(_ tag: ASN1Tag) throws(ASN1Error) -> ASN1Element {
        let offset = position
        let element = try next()
        guard element.tag == tag else { throw ASN1Error(.unexpectedTag, at: offset) }
        return element
    }

    /// Reads the next element only when it has `tag` (for OPTIONAL and DEFAULT fields).
    public mutating func nextIf(_ tag: ASN1Tag) throws(ASN1Error) -> ASN1Element? {
        guard !isAtEnd else { return nil }
        let element = try peek()
        guard element.tag == tag else { return nil }
        position = element.end
        return element
    }

    /// A reader over the contents of a constructed element.
    public func children(of element: ASN1Element) throws(ASN1Error) -> ASN1Reader {
        guard element.tag.constructed else { throw ASN1Error(.unexpectedTag, at: element.start) }
        return ASN1Reader(bytes, rules: rules, range: element.contentRange, depth: depth + 1)
    }

    /// Requires that every element at this level has been read.
    public func finish() throws(ASN1Error) {
        if position != end { throw ASN1Error(.trailingData, at: position) }
    }

    public subscript(range: Range<Int>) -> ArraySlice<UInt8> { bytes[range] }

    // MARK: Primitive values

    /// The contents of an OCTET STRING; in BER also the constructed form (concatenated segments).
    public func octets(of element: ASN1Element) throws(ASN1Error) -> [UInt8] {
        guard element.tag.number == ASN1Tag.octetString.number, element.tag.tagClass == .universal else {
            throw ASN1Error(.unexpectedTag, at: element.start)
        }
        if !element.tag.constructed { return Array(bytes[element.contentRange]) }
        guard rules == .ber else { throw ASN1Error(.unexpectedTag, at: element.start) }
        // Each nested segment is a recursive call: without this bound, 16,000 nested definite-length
        // segments (64 KiB) overflowed the stack (ops/fuzz; ASN1FuzzRegressionTests).
        guard depth < Self.maxDepth else { throw ASN1Error(.tooDeep, at: element.start) }
        var out = [UInt8]()
        var inner = try children(of: element)
        while !inner.isAtEnd {
            let segment = try inner.next()
            out += try inner.octets(of: segment)
        }
        return out
    }

    /// An INTEGER's two's-complement contents, checked for minimal encoding.
    public func integerBytes(of element: ASN1Element) throws(ASN1Error) -> ArraySlice<UInt8> {
        guard element.tag == .integer else { throw ASN1Error(.unexpectedTag, at: element.start) }
        let contents = bytes[element.contentRange]
        guard let first = contents.first else { throw ASN1Error(.invalidValue, at: element.start) }
        if contents.count > 1 {
            let second = contents[contents.startIndex + 1]
            if (first == 0 && second & 0x80 == 0) || (first == 0xff && second & 0x80 != 0) {
                throw ASN1Error(.invalidValue, at: element.start)
            }
        }
        return contents
    }

    /// A small INTEGER as an Int.
    public func integer(of element: ASN1Element) throws(ASN1Error) -> Int {
        let contents = try integerBytes(of: element)
        guard contents.count <= 7 else { throw ASN1Error(.invalidValue, at: element.start) }
        var value = contents.first! & 0x80 != 0 ? -1 : 0
        for b in contents { value = value << 8 | Int(b) }
        return value
    }

    /// A small ENUMERATED value as an Int (the same minimal two's-complement contents as an INTEGER).
    public func enumerated(of element: ASN1Element) throws(ASN1Error) -> Int {
        guard element.tag == .enumerated else { throw ASN1Error(.unexpectedTag, at: element.start) }
        var integer = element
        integer.tag = .integer
        return try self.integer(of: integer)
    }

    /// A NULL, which has no contents.
    public func null(of element: ASN1Element) throws(ASN1Error) {
        guard element.tag == .null, element.contentEnd == element.contentStart else {
            throw ASN1Error(.invalidValue, at: element.start)
        }
    }

    /// A BIT STRING with no unused bits (keys and signatures), without its leading count octet.
    public func bitStringBytes(of element: ASN1Element) throws(ASN1Error) -> ArraySlice<UInt8> {
        guard element.tag == .bitString, element.contentEnd > element.contentStart,
            bytes[element.contentStart] == 0
        else { throw ASN1Error(.invalidValue, at: element.start) }
        return bytes[(element.contentStart + 1)..<element.contentEnd]
    }

    /// A DER BOOLEAN (0x00 or 0xFF only).
    public func boolean(of element: ASN1Element) throws(ASN1Error) -> Bool {
        guard element.tag == .boolean, element.contentEnd - element.contentStart == 1 else {
            throw ASN1Error(.invalidValue, at: element.start)
        }
        switch bytes[element.contentStart] {
        case 0: return false
        case 0xff: return true
        default: throw ASN1Error(.invalidValue, at: element.start)
        }
    }

    /// An OBJECT IDENTIFIER, validated as base-128 arcs.
    public func objectIdentifier(of element: ASN1Element) throws(ASN1Error) -> OID {
        guard element.tag == .objectIdentifier, let oid = OID(encoded: bytes[element.contentRange])
        else { throw ASN1Error(.invalidValue, at: element.start) }
        return oid
    }

    /// UTCTime or GeneralizedTime in the DER forms RFC 5280 allows (Zulu, whole seconds).
    public func time(of element: ASN1Element) throws(ASN1Error) -> Timestamp {
        let text = bytes[element.contentRange]
        let parsed: Timestamp?
        switch element.tag {
        case .utcTime: parsed = Timestamp(asn1Time: text, yearDigits: 2)
        case .generalizedTime: parsed = Timestamp(asn1Time: text, yearDigits: 4)
        default: throw ASN1Error(.unexpectedTag, at: element.start)
        }
        guard let parsed else { throw ASN1Error(.invalidValue, at: element.start) }
        return parsed
    }
}
