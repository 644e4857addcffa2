import Synchronization

/// Statements to send in one round trip (`PGConnection.pipeline(_:)`), each read back
/// through the typed handle its `append` returned: no result is found by counting positions.
public struct PGPipeline: Sendable {
    /// Where one statement's result is found in ``Results``, typed by the statement's result.
    public struct Handle<Result: Sendable>: Sendable {
        fileprivate let index: Int
        fileprivate let pipeline: Int
    }

    /// Every statement's typed result.
    public struct Results: Sendable {
        fileprivate let values: [any Sendable]
        fileprivate let pipeline: Int

        public subscript<Result>(handle: Handle<Result>) -> Result {
            precondition(handle.pipeline == pipeline, "PGPipeline: a handle of another pipeline")
            return values[handle.index] as! Result  // The handle was typed by the statement that made the value.
        }
    }

    private var statements: [any PGStatement] = []
    /// Tells this pipeline's handles from another's: a counter, not a random number (one `getrandom`
    /// system call per pipeline, two per batch).
    private let identity = Self.made.add(1, ordering: .relaxed).newValue
    private static let made = Atomic<Int>(0)

    public init() {}

    public var isEmpty: Bool { statements.isEmpty }

    /// Adds a statement after the ones already added; its result is read through the handle.
    @discardableResult
    public mutating func append<S: PGStatement>(_ statement: S) -> Handle<S.Result> {
        statements.append(statement)
        return Handle(index: statements.count - 1, pipeline: identity)
    }

    fileprivate func decode(_ rows: [PGRows]) throws(PGError) -> Results {
        var values: [any Sendable] = []
        values.reserveCapacity(rows.count)
        for (statement, result) in zip(statements, rows) { values.append(try statement.decode(result)) }
        return Results(values: values, pipeline: identity)
    }

    fileprivate var untyped: [(sql: String, params: [PGValue])] {
        statements.map { statement in
            let query = statement.query
            return (query.sql, query.binds)
        }
    }
}

extension PGConnection {
    /// Runs the pipeline's statements in one round trip (as the untyped `pipeline(_:)` does) and
    /// decodes each statement's result.
    ///
    /// Rows are decoded after the sync, so a pipeline that ends in `COMMIT` has committed when a result
    /// turns out not to have the shape its statement promises: the work must be idempotent anyway (a
    /// connection lost during `COMMIT` leaves the same doubt).
    /// - Throws: as the untyped pipeline; decoding errors and `.unexpectedRowCount` as the typed `execute(_:)`.
    public func pipeline(_ pipeline: PGPipeline) throws(PGError) -> PGPipeline.Results {
        try pipeline.decode(self.pipeline(pipeline.untyped))
    }

    /// Runs a fixed list of statements in one round trip and returns their typed results in order.
    public func pipeline<each S: PGStatement>(_ statement: repeat each S) throws(PGError) -> (repeat (each S).Result) {
        var pipeline = PGPipeline()
        let handles = (repeat pipeline.append(each statement))
        let results = try self.pipeline(pipeline)
        return (repeat results[each handles])
    }
}
