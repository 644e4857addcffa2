/// One row of a result, read by column name: what a ``PGRowDecodable`` is built from.
///
/// Columns are found by name, never by position, so reordering a SELECT cannot shift values into the
/// wrong fields; a missing column, a NULL where the field is not optional, and a value of another type
/// are each a ``PGError`` naming the statement and the column (never the value).
public struct PGRow: Sendable {
    let rows: PGRows
    let index: Int
    /// The statement's type, named in errors (its name is made only then: it costs more than a row).
    let statement: any PGStatement.Type

    /// The column's value; NULL is `.unexpectedNull`.
    public func decode<T: PGDecodable>(_ column: String) throws(PGError) -> T {
        guard let value: T = try decode(column) else {
            throw PGError(code: .unexpectedNull, message: "\(statement): column \(column) is NULL")
        }
        return value
    }

    /// The column's value, nil for NULL.
    public func decode<T: PGDecodable>(_ column: String) throws(PGError) -> T? {
        guard let position = rows.position(of: column) else {
            throw PGError(
                code: .missingColumn, message: "\(statement): no column \(column); the result has \(rows.columns)")
        }
        guard let text = rows.string(index, position) else { return nil }
        let type = rows.type(ofColumn: position)
        guard let value = T(pgText: text, type: type) else {
            throw PGError(code: .typeMismatch, message: "\(statement): column \(column) (\(type)) is not a \(T.self)")
        }
        return value
    }
}

/// A struct one result row decodes into, by column name.
public protocol PGRowDecodable: Sendable {
    init(row: PGRow) throws(PGError)
}

/// The row of a statement whose rows carry nothing the caller reads (commands, writes whose result is
/// not needed).
public struct PGNoRow: PGRowDecodable {
    public init(row: PGRow) {}
}
