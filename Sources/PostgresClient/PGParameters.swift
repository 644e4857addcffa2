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

    /// Encodes `values`; throws (before anything is sent) when one cannot be represented.
    init(_ values: [PGValue]) throws(PGError) {
        guard values.count <= Self.maximumCount else {
            throw PGError(
                code: .invalidParameter,
                message: "\(values.count) parameters; the protocol allows at most \(Self.maximumCount)")
        }
        for (index, value) in values.enumerated() {
            switch value {
            case .null:
                append(type: 0, format: 0, bytes: nil)
            case .text(let text), .json(let text):
                // Text goes NUL-terminated, so an embedded NUL would silently cut the value short.
                guard !text.utf8.contains(0) else {
                    throw PGError(
                        code: .invalidParameter,
                        message: "parameter $\(index + 1) contains U+0000, which PostgreSQL text cannot store")
                }
                append(type: 0, format: 0, bytes: Array(text.utf8) + [0])
            case .int(let number):
                append(type: Self.int8OID, format: 0, bytes: Array(String(number).utf8) + [0])
            case .bool(let flag):
                append(type: Self.boolOID, format: 0, bytes: Array((flag ? "t" : "f").utf8) + [0])
            case .bytes(let bytes):
                append(type: Self.byteaOID, format: 1, bytes: bytes)
            case .timestamptz(let unixMicroseconds):
                let (since2000, overflow) = unixMicroseconds.subtractingReportingOverflow(PGArray.postgresEpochOffset)
                guard !overflow else {
                    throw PGError(code: .invalidParameter, message: "parameter $\(index + 1) is outside timestamptz's range")
                }
                append(type: Self.timestamptzOID, format: 1, bytes: withUnsafeBytes(of: since2000.bigEndian, Array.init))
            case .array(let array):
                guard !array.containsNUL else {
                    throw PGError(
                        code: .invalidParameter,
                        message: "parameter $\(index + 1) has an element containing U+0000, which PostgreSQL text cannot store")
                }
                append(type: array.arrayType, format: 1, bytes: array.encoded)
            }
        }
    }

    private mutating func append(type: Oid, format: Int32, bytes: [UInt8]?) {
        types.append(type)
        formats.append(format)
        guard let bytes else {
            lengths.append(0)
            offsets.append(nil)
            return
        }
        lengths.append(Int32(bytes.count))
        offsets.append(storage.count)
        storage += bytes
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
