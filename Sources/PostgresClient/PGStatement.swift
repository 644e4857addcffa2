/// One SQL statement as a type: its query (SQL fixed in the code, so nothing in it is ever built from
/// input, with the values it binds interpolated), the row its result decodes into by column name, and
/// what the caller gets back.
///
/// The result's shape is part of the type: a statement whose SQL promises one row is a
/// ``PGOneRowStatement`` and hands back that row, so a missing row is an `.unexpectedRowCount` error,
/// never an empty default. Run one with `PGConnection.execute(_:)`, several in one round
/// trip with ``PGPipeline``.
public protocol PGStatement: Sendable {
    /// What one row of the result decodes into.
    associatedtype Row: PGRowDecodable = PGNoRow
    /// What the caller gets: every row by default.
    associatedtype Result: Sendable = [Row]

    /// The statement's SQL and values. Its text must not vary with the values, so that a statement type
    /// is prepared once per connection (see ``PGQuery``).
    var query: PGQuery { get }
    /// The result from the decoded rows: where a statement says how many rows its SQL promises (an
    /// instance method, so a statement answering once per input row can hold the count it promises).
    func result(_ rows: PGDecodedRows<Row>) throws(PGError) -> Result
}

extension PGStatement {
    /// Decodes every row of `rows`, then shapes them into the statement's result.
    func decode(_ rows: PGRows) throws(PGError) -> Result {
        var decoded: [Row] = []
        decoded.reserveCapacity(rows.count)
        for index in 0..<rows.count {
            decoded.append(try Row(row: PGRow(rows: rows, index: index, statement: Self.self)))
        }
        return try result(PGDecodedRows(rows: decoded, affectedRows: rows.affectedRows, statement: Self.self))
    }
}

extension PGStatement where Result == [Row] {
    public func result(_ rows: PGDecodedRows<Row>) -> [Row] { rows.rows }
}

/// The decoded rows of one statement's result, before they are shaped into its ``PGStatement/Result``.
public struct PGDecodedRows<Row: Sendable>: Sendable {
    public let rows: [Row]
    /// As the command tag reports it (``PGRows/affectedRows``).
    public let affectedRows: Int
    /// The statement's type, named in errors.
    let statement: any PGStatement.Type

    /// The one row the SQL promises.
    /// - Throws: `.unexpectedRowCount` when there is none or more than one.
    public func exactlyOne() throws(PGError) -> Row {
        guard rows.count == 1 else { throw unexpected("exactly one row") }
        return rows[0]
    }

    /// The row, or nil when there is none.
    /// - Throws: `.unexpectedRowCount` when there is more than one.
    public func atMostOne() throws(PGError) -> Row? {
        guard rows.count <= 1 else { throw unexpected("at most one row") }
        return rows.first
    }

    /// `count` rows, no more and no fewer: a statement that answers once per input row.
    /// - Throws: `.unexpectedRowCount` otherwise.
    public func exactly(_ count: Int) throws(PGError) -> [Row] {
        guard rows.count == count else { throw unexpected("\(count) rows") }
        return rows
    }

    private func unexpected(_ promised: String) -> PGError {
        PGError(code: .unexpectedRowCount, message: "\(statement): promised \(promised), the result has \(rows.count)")
    }
}

/// A statement whose SQL promises exactly one row (an aggregate, `INSERT … RETURNING` of one row, an
/// upsert): the result is that row, and no row is an error.
public protocol PGOneRowStatement: PGStatement where Result == Row {}

extension PGOneRowStatement {
    public func result(_ rows: PGDecodedRows<Row>) throws(PGError) -> Row { try rows.exactlyOne() }
}

/// A statement whose SQL promises at most one row (a lookup by primary key): nil when there is none.
public protocol PGOptionalRowStatement: PGStatement where Result == Row? {}

extension PGOptionalRowStatement {
    public func result(_ rows: PGDecodedRows<Row>) throws(PGError) -> Row? { try rows.atMostOne() }
}

/// A statement whose rows, if any, carry nothing (DDL, `BEGIN`, a write whose effect is all it does).
public protocol PGCommandStatement: PGStatement where Row == PGNoRow, Result == Void {}

extension PGCommandStatement {
    public func result(_ rows: PGDecodedRows<PGNoRow>) {}
}

/// A write whose result is how many rows it changed (`UPDATE`, `DELETE`), as its command tag reports.
public protocol PGAffectedRowsStatement: PGStatement where Row == PGNoRow, Result == Int {}

extension PGAffectedRowsStatement {
    public func result(_ rows: PGDecodedRows<PGNoRow>) -> Int { rows.affectedRows }
}

/// `BEGIN`, for pipelines that hold a transaction.
public struct PGBegin: PGCommandStatement {
    public var query: PGQuery { "BEGIN" }
    public init() {}
}

/// `COMMIT`, for pipelines that hold a transaction.
public struct PGCommit: PGCommandStatement {
    public var query: PGQuery { "COMMIT" }
    public init() {}
}

/// `ROLLBACK`, for ``PGConnection/transaction(_:)`` after a failed body.
public struct PGRollback: PGCommandStatement {
    public var query: PGQuery { "ROLLBACK" }
    public init() {}
}

extension PGConnection {
    /// Runs one statement and returns its typed result (see ``execute(_:_:)`` for how it is sent).
    /// - Throws: as ``execute(_:_:)``; `.missingColumn`, `.unexpectedNull`, `.typeMismatch` when a row does
    ///   not decode, `.unexpectedRowCount` when the result has fewer or more rows than the statement
    ///   promises.
    public func execute<S: PGStatement>(_ statement: S) throws(PGError) -> S.Result {
        let query = statement.query
        return try statement.decode(execute(query.sql, query.binds))
    }
}
