internal import CLibPQ

/// Statement parameters laid out the way `PQexecParams` / `PQsendQueryParams` read them.
///
/// All values live in one buffer that exists only for the duration of `withPointers`: libpq copies the
/// parameters into its output buffer before the call returns, so nothing outlives the call.
struct PGParameters {
    private(set) var types: [Oid] = []
    private var formats: [Int32] = []
    private var lengths: [Int32] = []
    /// Start of each value in `storage`, nil for NULL.
    private var offsets: [Int?] = []
    /// Values back to back. The leading spare byte keeps the base address non-NULL, which a zero-length
    /// bytea needs (NULL would mean SQL NULL).
    private var storage: [UInt8] = [0]

    /// The protocol counts parameters in 16 bits.
    private static let maximumCount = Int(UInt16.max)
    private static let int8OID: Oid = 20
    private static let boolOID: Oid = 16
    private static let byteaOID: Oid = 17
    private static let timestamptzOID: Oid = 1184

    /// Encodes `values`; throws (before anything is sent) when one cannot be represented. Every statement of
    /// every batch passes here, so the buffers are sized once and each value is written into place.
    init(_ values: [PGValue]) throws(PGError) {
        guard values.count <= Self.maximumCount else {
            throw PGError(
                code: .invalidParameter,
                message: "\(values.count) parameters; the protocol allows at most \(Self.maximumCount)")
        }
        types.reserveCapacity(values.count)
        formats.reserveCapacity(values.count)
        lengths.reserveCapacity(values.count)
        offsets.reserveCapacity(values.count)
        storage.reserveCapacity(values.reduce(1) { $0 + Self.size(of: $1) })
        for (index, value) in values.enumerated() {
            switch value {
            case .null:
                types.append(0)
                formats.append(0)
                lengths.append(0)
                offsets.append(nil)
            case .text(let text), .json(let text):
                // Text goes NUL-terminated, so an embedded NUL would silently cut the value short.
                guard !text.utf8.contains(0) else {
                    throw PGError(
                        code: .invalidParameter,
                        message: "parameter $\(index + 1) contains U+0000, which PostgreSQL text cannot store")
                }
                append(type: 0, format: 0) { $0 += text.utf8; $0.append(0) }
            case .int(let number):
                append(type: Self.int8OID, format: 0) { $0 += String(number).utf8; $0.append(0) }
            case .bool(let flag):
                append(type: Self.boolOID, format: 0) { $0 += [UInt8(ascii: flag ? "t" : "f"), 0] }
            case .bytes(let bytes):
                append(type: Self.byteaOID, format: 1) { $0 += bytes }
            case .timestamptz(let unixMicroseconds):
                let (since2000, overflow) = unixMicroseconds.subtractingReportingOverflow(PGArray.postgresEpochOffset)
                guard !overflow else {
                    throw PGError(code: .invalidParameter, message: "parameter $\(index + 1) is outside timestamptz's range")
                }
                append(type: Self.timestamptzOID, format: 1) { storage in
                    withUnsafeBytes(of: since2000.bigEndian) { storage += $0 }
                }
            case .array(let array):
                guard !array.containsNUL else {
                    throw PGError(
                        code: .invalidParameter,
                        message: "parameter $\(index + 1) has an element containing U+0000, which PostgreSQL text cannot store")
                }
                append(type: array.arrayType, format: 1) { $0 += array.encoded }
            }
        }
    }

    /// The bytes `value` takes in `storage` (a decimal integer at most 20 and its NUL).
    private static func size(of value: PGValue) -> Int {
        switch value {
        case .null: 0
        case .text(let text), .json(let text): text.utf8.count + 1
        case .int: 21
        case .bool: 2
        case .bytes(let bytes): bytes.count
        case .timestamptz: 8
        case .array(let array): array.encoded.count
        }
    }

    /// A non-NULL value: `write` appends its bytes to `storage`.
    private mutating func append(type: Oid, format: Int32, _ write: (inout [UInt8]) -> Void) {
        let start = storage.count
        write(&storage)
        types.append(type)
        formats.append(format)
        lengths.append(Int32(storage.count - start))
        offsets.append(start)
    }

    /// Calls `body` with (count, types, values, lengths, formats), valid only during the call.
    func withPointers<R>(
        _ body: (
            Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
            UnsafePointer<Int32>?
        ) -> R
    ) -> R {
        storage.withUnsafeBytes { buffer in
            let base = buffer.baseAddress!
            let values: [UnsafePointer<CChar>?] = offsets.map { offset in
                offset.map { (base + $0).assumingMemoryBound(to: CChar.self) }
            }
            return body(Int32(types.count), types, values, lengths, formats)
        }
    }
}
