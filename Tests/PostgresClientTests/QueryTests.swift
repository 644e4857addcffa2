import PostgresClient
import Testing

/// Runs a ``PGQuery`` the test builds through the typed path, as a statement would.
private struct Query<Row: PGRowDecodable>: PGStatement {
    let query: PGQuery
}

private struct Bound: PGRowDecodable, Equatable {
    let word: String
    let number: Int64
    let missing: Bool

    init(word: String, number: Int64, missing: Bool) {
        self.word = word
        self.number = number
        self.missing = missing
    }

    init(row: PGRow) throws(PGError) {
        word = try row.decode("word")
        number = try row.decode("number")
        missing = try row.decode("missing")
    }
}

@Suite("Queries by interpolation")
struct QueryTests {
    @Test("each interpolated value is the next placeholder, bound in the order written; literal text is kept")
    func numbering() {
        let query: PGQuery = "SELECT \(Int64(7)) + n FROM t WHERE name = \("x") AND ok = \(true) AND raw = \([UInt8]([0, 1]))::bytea"
        #expect(query.sql == "SELECT $1 + n FROM t WHERE name = $2 AND ok = $3 AND raw = $4::bytea")
        #expect(query.binds == [.int(7), .text("x"), .bool(true), .bytes([0, 1])])
        let plain: PGQuery = "SELECT 1"
        #expect(plain.sql == "SELECT 1" && plain.binds.isEmpty)
    }

    @Test("a value written twice is bound twice, and the text does not vary with the values")
    func repeatedValue() {
        func query(_ team: String) -> PGQuery { "SELECT \(team)::text IS NULL OR team_id = \(team)" }
        #expect(query("A").sql == "SELECT $1::text IS NULL OR team_id = $2")
        #expect(query("A").binds == [.text("A"), .text("A")])
        #expect(query("B").sql == query("A").sql)
    }

    @Test("nil binds NULL; arrays bind as one array parameter, nil elements NULL")
    func optionalsAndArrays() {
        let missing: String? = nil
        let present: Int? = 3
        let query: PGQuery = "\(missing), \(present), \(["a", nil]), \([Int64(1)]), \([[UInt8]([9]), nil]), \([Int32(2)]), \([false])"
        #expect(query.sql == "$1, $2, $3, $4, $5, $6, $7")
        #expect(
            query.binds == [
                .null, .int(3), .array(.text(["a", nil])), .array(.int8([1])), .array(.bytea([[9], nil])), .array(.int4([2])),
                .array(.bool([false])),
            ])
    }

    /// Arrays without nils take their own path (no per-element conversion to optionals): the same parameters.
    @Test("an array without nils binds as the same array with optional elements")
    func arraysWithoutNils() {
        let texts = ["a", "", "ü"]
        let big = [Int64.min, 0, Int64.max]
        let ints = [-1, 0, 7]
        let small = [Int32.min, Int32.max]
        let flags = [true, false]
        let blobs: [[UInt8]] = [[], [0, 255]]
        let query: PGQuery = "\(texts), \(big), \(ints), \(small), \(flags), \(blobs), \([String]())"
        #expect(
            query.binds == [
                .array(.text(texts as [String?])), .array(.int8(big as [Int64?])), .array(.int8(ints.map { Int64($0) } as [Int64?])),
                .array(.int4(small as [Int32?])), .array(.bool(flags as [Bool?])), .array(.bytea(blobs as [[UInt8]?])),
                .array(.text([String?]())),
            ])
        #expect(PGArray.text(["a\u{0}b"]) == PGArray.text(["a\u{0}b"] as [String?]))
    }

    @Test("a fragment spliced in keeps its text and its values, numbered after the ones before it")
    func fragments() {
        let limit: PGQuery = "least(\(10), n) >= \(1)"
        let query: PGQuery = "SELECT \("a") WHERE \(limit) AND \(unescaped: "kind = 'fixed'") AND \(limit)"
        #expect(query.sql == "SELECT $1 WHERE least($2, n) >= $3 AND kind = 'fixed' AND least($4, n) >= $5")
        #expect(query.binds == [.text("a"), .int(10), .int(1), .int(10), .int(1)])
    }

    @Test("values reach PostgreSQL as bound, run alone or in a pipeline")
    func againstTheServer() throws {
        let db = try TestDatabase.connect()
        func bound(_ word: String, _ number: Int64) -> Query<Bound> {
            Query(query: "SELECT \(word) AS word, \(number) AS number, \(Optional<String>.none)::text IS NULL AS missing")
        }
        let word = "it's $1 -- not SQL"
        #expect(try db.execute(bound(word, .max)) == [Bound(word: word, number: .max, missing: true)])
        let (first, second) = try db.pipeline(bound("a", 1), bound("b", .min))
        #expect(first == [Bound(word: "a", number: 1, missing: true)])
        #expect(second == [Bound(word: "b", number: .min, missing: true)])
    }

    @Test("an instant binds as the exact microsecond, whatever the session's time zone; out of range is refused before sending")
    func timestampRoundTrip() throws {
        let db = try TestDatabase.connect()
        try db.execute("SET TimeZone = 'Pacific/Chatham'")
        for micros: Int64 in [1_796_042_096_789_012, 0, -1, -62_135_596_800_000_000, 253_402_300_799_999_999] {
            let instant = PGValue.timestamptz(unixMicroseconds: micros)
            let query: PGQuery = "SELECT (extract(epoch FROM \(instant)::timestamptz) * 1000000)::bigint"
            #expect(try db.execute(query.sql, query.binds).int(0, 0) == micros)
        }
        let text = try db.execute("SELECT to_char($1 AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US')", [
            .timestamptz(unixMicroseconds: 1_796_042_096_789_012)
        ])
        #expect(text.string(0, 0) == "2026-11-30T12:34:56.789012")
        let error = #expect(throws: PGError.self) { try db.execute("SELECT $1", [.timestamptz(unixMicroseconds: .min)]) }
        #expect(error?.code == .invalidParameter)
        #expect(db.isHealthy)
    }
}
