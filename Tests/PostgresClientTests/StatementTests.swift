import PostgresClient
import Testing

/// Statements of these tests: the SQL names the columns in another order than the rows read them.
private struct Pair: PGRowDecodable, Equatable {
    let number: Int64
    let word: String?

    init(number: Int64, word: String?) {
        self.number = number
        self.word = word
    }

    init(row: PGRow) throws(PGError) {
        number = try row.decode("number")
        word = try row.decode("word")
    }
}

private struct Pairs: PGStatement {
    typealias Row = Pair
    let query: PGQuery

    init(_ pairs: [(String?, Int64)]) {
        query = "SELECT word, number FROM unnest(\(pairs.map(\.0))::text[], \(pairs.map(\.1))::int8[]) AS x(word, number) ORDER BY number"
    }
}

private struct OnePair: PGOneRowStatement {
    typealias Row = Pair
    let query: PGQuery
    init(_ pairs: [(String?, Int64)]) { query = Pairs(pairs).query }
}

private struct MaybePair: PGOptionalRowStatement {
    typealias Row = Pair
    let query: PGQuery
    init(_ pairs: [(String?, Int64)]) { query = Pairs(pairs).query }
}

/// One column read as `T`, from SQL the test chooses through the type.
private struct Column<T: PGDecodable, SQL: SQLText>: PGOneRowStatement {
    var query: PGQuery { PGQuery(stringLiteral: SQL.text) }
    struct Row: PGRowDecodable {
        let value: T
        init(row: PGRow) throws(PGError) { value = try row.decode("value") }
    }
}

private protocol SQLText: Sendable { static var text: String { get } }
private enum TextValue: SQLText { static let text = "SELECT 'forty-two'::text AS value" }
private enum IntValue: SQLText { static let text = "SELECT 42::int4 AS value" }
private enum WideValue: SQLText { static let text = "SELECT 4294967296::int8 AS value" }
private enum NullValue: SQLText { static let text = "SELECT NULL::text AS value" }
private enum OtherName: SQLText { static let text = "SELECT 1 AS other" }
private enum BoolValue: SQLText { static let text = "SELECT true AS value" }
private enum BytesValue: SQLText { static let text = "SELECT '\\x00ff0a'::bytea AS value" }
private enum JSONBValue: SQLText { static let text = "SELECT '{\"a\": 1}'::jsonb AS value" }
private enum Size: String, PGDecodable { case small, large }
private enum SizeValue: SQLText { static let text = "SELECT 'medium'::text AS value" }
private enum LargeValue: SQLText { static let text = "SELECT 'large'::text AS value" }

private struct Insert: PGCommandStatement {
    let n: Int64
    init(_ n: Int64) { self.n = n }
    var query: PGQuery { "INSERT INTO typed VALUES (\(n))" }
}

private struct DeleteAbove: PGAffectedRowsStatement {
    let n: Int64
    init(_ n: Int64) { self.n = n }
    var query: PGQuery { "DELETE FROM typed WHERE n > \(n)" }
}

private struct CountRows: PGOneRowStatement {
    var query: PGQuery { "SELECT count(*) AS n FROM typed" }
    struct Row: PGRowDecodable {
        let n: Int
        init(row: PGRow) throws(PGError) { n = try row.decode("n") }
    }
}

@Suite("Typed statements")
struct StatementTests {
    @Test("rows decode by column name, whatever the SELECT's order; NULL is nil for an optional field")
    func byName() throws {
        let db = try TestDatabase.connect()
        let rows = try db.execute(Pairs([("two", 2), (nil, 1)]))
        #expect(rows == [Pair(number: 1, word: nil), Pair(number: 2, word: "two")])
    }

    @Test("a column the row reads and the result lacks is missingColumn, permanent")
    func missingColumn() throws {
        let db = try TestDatabase.connect()
        let error = #expect(throws: PGError.self) { try db.execute(Column<Int64, OtherName>()) }
        #expect(error?.code == .missingColumn)
        #expect(error?.fault == .permanent)
        #expect(error?.message.contains("value") == true)
    }

    @Test("NULL where the field is not optional is unexpectedNull, permanent")
    func unexpectedNull() throws {
        let db = try TestDatabase.connect()
        let error = #expect(throws: PGError.self) { try db.execute(Column<String, NullValue>()) }
        #expect(error?.code == .unexpectedNull)
        #expect(error?.fault == .permanent)
    }

    @Test("a value of another column type is typeMismatch, and its text is not in the error")
    func typeMismatch() throws {
        let db = try TestDatabase.connect()
        for error in [
            #expect(throws: PGError.self) { try db.execute(Column<Int64, TextValue>()) },
            #expect(throws: PGError.self) { try db.execute(Column<String, IntValue>()) },
            #expect(throws: PGError.self) { try db.execute(Column<Bool, IntValue>()) },
            #expect(throws: PGError.self) { try db.execute(Column<[UInt8], TextValue>()) },
            #expect(throws: PGError.self) { try db.execute(Column<Int32, WideValue>()) },
            #expect(throws: PGError.self) { try db.execute(Column<Size, SizeValue>()) },
        ] {
            #expect(error?.code == .typeMismatch)
            #expect(error?.fault == .permanent)
            #expect(error.map { String(reflecting: $0) }?.contains("forty") == false)
            #expect(error.map { String(reflecting: $0) }?.contains("medium") == false)
        }
    }

    @Test("each Swift type reads its own column types")
    func decodesValues() throws {
        let db = try TestDatabase.connect()
        #expect(try db.execute(Column<String, TextValue>()).value == "forty-two")
        #expect(try db.execute(Column<Int64, IntValue>()).value == 42)
        #expect(try db.execute(Column<Int, WideValue>()).value == 4_294_967_296)
        #expect(try db.execute(Column<Int32, IntValue>()).value == 42)
        #expect(try db.execute(Column<Bool, BoolValue>()).value == true)
        #expect(try db.execute(Column<[UInt8], BytesValue>()).value == [0, 255, 10])
        #expect(try db.execute(Column<String, JSONBValue>()).value == "{\"a\": 1}")
        #expect(try db.execute(Column<Size, LargeValue>()).value == .large)
    }

    @Test("a one-row statement with no row or two rows is unexpectedRowCount, permanent")
    func exactlyOne() throws {
        let db = try TestDatabase.connect()
        #expect(try db.execute(OnePair([("one", 1)])) == Pair(number: 1, word: "one"))
        for pairs in [[], [("one", 1), ("two", 2)]] as [[(String?, Int64)]] {
            let error = #expect(throws: PGError.self) { try db.execute(OnePair(pairs)) }
            #expect(error?.code == .unexpectedRowCount)
            #expect(error?.fault == .permanent)
        }
    }

    @Test("an at-most-one-row statement: nil for none, the row for one, unexpectedRowCount for two")
    func atMostOne() throws {
        let db = try TestDatabase.connect()
        #expect(try db.execute(MaybePair([])) == nil)
        #expect(try db.execute(MaybePair([("one", 1)])) == Pair(number: 1, word: "one"))
        let error = #expect(throws: PGError.self) { try db.execute(MaybePair([("one", 1), ("two", 2)])) }
        #expect(error?.code == .unexpectedRowCount)
    }

    @Test("a pipeline hands each statement its own typed result, one round trip, in a transaction")
    func typedPipeline() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE typed (n bigint PRIMARY KEY)")
        var pipeline = PGPipeline()
        pipeline.append(PGBegin())
        for n in 1...5 { pipeline.append(Insert(Int64(n))) }
        let deleted = pipeline.append(DeleteAbove(3))
        let pairs = pipeline.append(Pairs([("b", 2), ("a", 1)]))
        let count = pipeline.append(CountRows())
        let missing = pipeline.append(MaybePair([]))
        pipeline.append(PGCommit())
        let results = try db.pipeline(pipeline)
        #expect(results[deleted] == 2)
        #expect(results[pairs] == [Pair(number: 1, word: "a"), Pair(number: 2, word: "b")])
        #expect(results[count].n == 3)
        #expect(results[missing] == nil)
        #expect(db.isHealthy)

        let (counted, one) = try db.pipeline(CountRows(), OnePair([("x", 7)]))
        #expect(counted.n == 3)
        #expect(one == Pair(number: 7, word: "x"))
    }

    @Test("a statement in a pipeline whose result breaks its promise fails the pipeline")
    func pipelineRowCount() throws {
        let db = try TestDatabase.connect()
        let error = #expect(throws: PGError.self) { try db.pipeline(CountRowsOfNothing(), OnePair([])) }
        #expect(error?.code == .unexpectedRowCount)
        #expect(db.isHealthy)
    }
}

private struct CountRowsOfNothing: PGOneRowStatement {
    var query: PGQuery { "SELECT count(*) AS n FROM generate_series(1, 0)" }
    struct Row: PGRowDecodable {
        let n: Int
        init(row: PGRow) throws(PGError) { n = try row.decode("n") }
    }
}
