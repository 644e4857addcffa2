internal import CLibPQ

/// The rows of one statement's result.
///
/// Results are requested in text format and decoded on access, so reading one column of a wide row costs
/// only that column. Accessors return nil for SQL `NULL` and for text that is not of the requested type;
/// a row or column out of range is a programming error and traps, as an array subscript does.
/// The value is immutable and `Sendable`: it can be handed to another thread once the call returned.
public struct PGRows: Sendable {
    /// Number of rows returned (0 for statements without a result set).
    public let count: Int
    /// Column names in result order.
    public let columns: [String]
    /// Rows inserted, updated, deleted, selected… as the command tag reports them (`PQcmdTuples`); 0 when
    /// the command reports none.
    public let affectedRows: Int
    /// The command tag, e.g. `INSERT 0 1`, `UPDATE 3`, `BEGIN`.
    public let commandTag: String

    private let result: PGResult

    init(_ result: PGResult) {
        let pointer = result.pointer
        self.result = result
        count = Int(PQntuples(pointer))
        columns = (0..<PQnfields(pointer)).map { String(cString: PQfname(pointer, $0)) }
        affectedRows = Int(String(cString: PQcmdTuples(pointer))) ?? 0
        commandTag = String(cString: PQcmdStatus(pointer))
    }

    /// The value as text, exactly as PostgreSQL printed it.
    public func string(_ row: Int, _ column: Int) -> String? {
        withValue(row, column) { String(decoding: $0, as: UTF8.self) }
    }

    /// The value as a 64-bit integer (`int2`, `int4`, `int8`, `oid`…); nil when it is not one.
    public func int(_ row: Int, _ column: Int) -> Int64? {
        string(row, column).flatMap { Int64($0) }
    }

    /// The value as a boolean (`bool` prints as `t` / `f`); nil when it is not one.
    public func bool(_ row: Int, _ column: Int) -> Bool? {
        switch string(row, column) {
        case "t": true
        case "f": false
        default: nil
        }
    }

    /// The bytes of a `bytea` value, decoded from its text form (hex, or the older escape format when the
    /// server's `bytea_output` says so); for other types, the UTF-8 bytes of the text.
    public func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        let isBytea = type(ofColumn: column) == .bytea
        return withValue(row, column) { text -> [UInt8] in
            guard isBytea else { return Array(text) }
            var length = 0
            // PQgetvalue's text is NUL-terminated, as PQunescapeBytea requires.
            guard let decoded = PQunescapeBytea(text.baseAddress, &length) else {
                fatalError("PQunescapeBytea: out of memory")
            }
            defer { PQfreemem(decoded) }
            return Array(UnsafeBufferPointer(start: decoded, count: length))
        }
    }

    /// The value as text, from the column called `name` (the first one when several share the name; a
    /// name no column has traps).
    public func string(_ row: Int, _ name: String) -> String? { string(row, index(of: name)) }
    /// The value as a 64-bit integer, the column found by name.
    public func int(_ row: Int, _ name: String) -> Int64? { int(row, index(of: name)) }
    /// The value as a boolean, the column found by name.
    public func bool(_ row: Int, _ name: String) -> Bool? { bool(row, index(of: name)) }
    /// The value as bytes (decoded `bytea`), the column found by name.
    public func bytes(_ row: Int, _ name: String) -> [UInt8]? { bytes(row, index(of: name)) }

    /// The column's type as the server describes it.
    func type(ofColumn column: Int) -> PGType { PGType(oid: PQftype(result.pointer, Int32(checkedColumn(column)))) }

    /// The position of the first column called `name`, for ``PGRow``. A scan, not a dictionary built for
    /// every result: a result has a handful of columns, and comparing a short name costs less than hashing it.
    func position(of name: String) -> Int? { columns.firstIndex(of: name) }

    private func index(of name: String) -> Int {
        guard let index = position(of: name) else {
            preconditionFailure("PGRows: no column named \(name); columns are \(columns)")
        }
        return index
    }

    private func checkedColumn(_ column: Int) -> Int {
        precondition(columns.indices.contains(column), "PGRows: column \(column) out of range 0..<\(columns.count)")
        return column
    }

    private func withValue<T>(_ row: Int, _ column: Int, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T? {
        precondition(row >= 0 && row < count, "PGRows: row \(row) out of range 0..<\(count)")
        let row = Int32(row)
        let column = Int32(checkedColumn(column))
        let pointer = result.pointer
        if PQgetisnull(pointer, row, column) != 0 { return nil }
        let length = Int(PQgetlength(pointer, row, column))
        return PQgetvalue(pointer, row, column).withMemoryRebound(to: UInt8.self, capacity: length + 1) {
            body(UnsafeBufferPointer(start: $0, count: length))
        }
    }
}
