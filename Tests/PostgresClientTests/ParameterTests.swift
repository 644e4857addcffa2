import PostgresClient
import Testing

@Suite("Parameters and decoding")
struct ParameterTests {
    @Test("every PGValue kind round-trips through a table")
    func everyKindRoundTrips() throws {
        let db = try TestDatabase.connect()
        try db.execute(
            "CREATE TEMP TABLE kinds (t text, i bigint, b bool, by bytea, j jsonb, js json, n text)")
        let allBytes = (0...255).map(UInt8.init)
        let unicode = "Grüße, 世界 🌍 – ∑ \u{200D} 'quoted' \"double\" \\back"
        let json = #"{"key": ["ü", 1, null, {"nested": true}]}"#
        let insert = "INSERT INTO kinds VALUES ($1, $2, $3, $4, $5, $6, $7)"
        try db.execute(insert, [.text(unicode), .int(.max), .bool(true), .bytes(allBytes), .json(json), .json(json), .null])
        try db.execute(insert, [.text(""), .int(.min), .bool(false), .bytes([]), .json("[]"), .json("{}"), .null])
        try db.execute(insert, [.null, .null, .null, .null, .null, .null, .null])

        let rows = try db.execute("SELECT t, i, b, by, j, js, n FROM kinds ORDER BY i NULLS LAST")
        #expect(rows.count == 3)
        #expect(rows.columns == ["t", "i", "b", "by", "j", "js", "n"])
        // Row 0: minimum values.
        #expect(rows.string(0, "t") == "")
        #expect(rows.int(0, "i") == .min)
        #expect(rows.bool(0, "b") == false)
        #expect(rows.bytes(0, "by") == [])
        #expect(rows.string(0, "j") == "[]")
        // Row 1: maximum values, every byte value, unicode.
        #expect(rows.string(1, 0) == unicode)
        #expect(rows.int(1, 1) == .max)
        #expect(rows.bool(1, 2) == true)
        #expect(rows.bytes(1, 3) == allBytes)
        #expect(rows.string(1, 5) == json)  // json keeps the text as sent
        #expect(rows.string(1, 6) == nil)
        // jsonb normalizes the text; compare semantically on the server.
        let same = try db.execute("SELECT j = $1::jsonb FROM kinds WHERE i = $2", [.json(json), .int(.max)])
        #expect(same.bool(0, 0) == true)
        // Row 2: NULL in every column, whatever accessor reads it.
        for column in 0..<7 {
            #expect(rows.string(2, column) == nil)
            #expect(rows.bytes(2, column) == nil)
        }
        #expect(rows.int(2, "i") == nil)
        #expect(rows.bool(2, "b") == nil)
    }

    @Test("untyped parameters take their type from context; int goes as int8")
    func parameterTypes() throws {
        let db = try TestDatabase.connect()
        let rows = try db.execute(
            "SELECT $1::uuid, pg_typeof($2), pg_typeof($3), $4::bytea, pg_typeof($4), $5::text IS NULL, $6::timestamptz < now()",
            [
                .text("6f9619ff-8b86-d011-b42d-00c04fc964ff"), .int(1), .bool(true), .bytes([0, 0xff]), .null,
                .text("2026-01-01T00:00:00Z"),
            ])
        #expect(rows.string(0, 0) == "6f9619ff-8b86-d011-b42d-00c04fc964ff")
        #expect(rows.string(0, 1) == "bigint")
        #expect(rows.string(0, 2) == "boolean")
        #expect(rows.bytes(0, 3) == [0, 0xff])
        #expect(rows.string(0, 4) == "bytea")
        #expect(rows.bool(0, 5) == true)
        #expect(rows.bool(0, 6) == true)
        // Accessors answer nil for text of another type rather than guessing.
        let text = try db.execute("SELECT 'abc', '1.5'")
        #expect(text.int(0, 0) == nil)
        #expect(text.int(0, 1) == nil)
        #expect(text.bool(0, 0) == nil)
        #expect(text.bytes(0, 0) == Array("abc".utf8))
    }

    @Test("bytea written in escape output format still decodes")
    func byteaEscapeOutput() throws {
        let db = try TestDatabase.connect()
        try db.execute("SET bytea_output = escape")
        let allBytes = (0...255).map(UInt8.init)
        let rows = try db.execute("SELECT $1::bytea", [.bytes(allBytes)])
        #expect(rows.string(0, 0)?.hasPrefix("\\000") == true)
        #expect(rows.bytes(0, 0) == allBytes)
    }

    @Test("SQL in a text parameter is data, not SQL")
    func injectionIsInert() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE accounts (name text PRIMARY KEY)")
        try db.execute("INSERT INTO accounts VALUES ('alice'), ('bob')")
        let attacks = [
            "x'); DROP TABLE accounts; --",
            "' OR '1'='1",
            "alice'--",
            "$1",
            "\\'; SELECT pg_sleep(10); --",
        ]
        for attack in attacks {
            let found = try db.execute("SELECT name FROM accounts WHERE name = $1", [.text(attack)])
            #expect(found.count == 0, "matched rows for \(attack)")
            try db.execute("INSERT INTO accounts VALUES ($1)", [.text(attack)])
        }
        let rows = try db.execute("SELECT count(*) FROM accounts")
        #expect(rows.int(0, 0) == Int64(2 + attacks.count))
        let stored = try db.execute("SELECT name FROM accounts WHERE name = $1", [.text(attacks[0])])
        #expect(stored.string(0, "name") == attacks[0])
    }

    @Test("text containing NUL is refused before anything is sent")
    func nulInText() throws {
        let db = try TestDatabase.connect()
        let error = #expect(throws: PGError.self) {
            try db.execute("SELECT $1::text", [.text("before\u{0}after")])
        }
        #expect(error?.code == .invalidParameter)
        #expect(error?.message.contains("after") == false)
        #expect(db.isHealthy)
        // Bytes may hold NUL: they go in binary format.
        #expect(try db.execute("SELECT $1::bytea", [.bytes([0, 0])]).bytes(0, 0) == [0, 0])
    }

    @Test("binary arrays unnest into rows, element by element, NULLs and empty arrays included")
    func arraysRoundTrip() throws {
        let db = try TestDatabase.connect()
        let unicode = "Grüße 🌍 'q' \"d\" \\ {a,b}"
        let rows = try db.execute(
            """
            SELECT t, i, n, b, by, ts = '2026-11-30T12:34:56.789012Z'::timestamptz, ts IS NULL
            FROM unnest($1::text[], $2::int8[], $3::int4[], $4::bool[], $5::bytea[], $6::timestamptz[])
                WITH ORDINALITY AS x(t, i, n, b, by, ts, o)
            ORDER BY o
            """,
            [
                .array(.text([unicode, nil, ""])), .array(.int8([.max, .min, nil])), .array(.int4([nil, -1, .max])),
                .array(.bool([true, false, nil])), .array(.bytea([(0...255).map(UInt8.init), [], nil])),
                .array(.timestamptz(unixMicroseconds: [1_796_042_096_789_012, nil, 0])),
            ])
        #expect(rows.count == 3)
        #expect(rows.string(0, 0) == unicode)
        #expect(rows.string(1, 0) == nil)
        #expect(rows.string(2, 0) == "")
        #expect([rows.int(0, 1), rows.int(1, 1), rows.int(2, 1)] == [.max, .min, nil])
        #expect([rows.int(0, 2), rows.int(1, 2), rows.int(2, 2)] == [nil, -1, Int64(Int32.max)])
        #expect([rows.bool(0, 3), rows.bool(1, 3), rows.bool(2, 3)] == [true, false, nil])
        #expect(rows.bytes(0, 4) == (0...255).map(UInt8.init))
        #expect(rows.bytes(1, 4) == [])
        #expect(rows.bytes(2, 4) == nil)
        #expect(rows.bool(0, 5) == true)
        #expect(rows.bool(1, 6) == true)
        let epoch = try db.execute("SELECT $1::timestamptz[] = ARRAY['1970-01-01T00:00:00Z'::timestamptz]", [.array(.timestamptz(unixMicroseconds: [0]))])
        #expect(epoch.bool(0, 0) == true)
        let empty = try db.execute("SELECT cardinality($1::text[]), count(*) FROM unnest($1::text[])", [.array(.text([]))])
        #expect(empty.int(0, 0) == 0)
        #expect(empty.int(0, 1) == 0)
    }

    @Test("an array with a text element containing NUL is refused before anything is sent")
    func nulInArray() throws {
        let db = try TestDatabase.connect()
        let error = #expect(throws: PGError.self) {
            try db.execute("SELECT $1::text[]", [.array(.text(["fine", "before\u{0}after"]))])
        }
        #expect(error?.code == .invalidParameter)
        #expect(db.isHealthy)
    }

    @Test("command tags and affected rows")
    func affectedRows() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE counted (n int)")
        let insert = try db.execute("INSERT INTO counted SELECT generate_series(1, 5)")
        #expect(insert.affectedRows == 5)
        #expect(insert.commandTag == "INSERT 0 5")
        #expect(insert.count == 0)
        let update = try db.execute("UPDATE counted SET n = n + 1 WHERE n > $1", [.int(2)])
        #expect(update.affectedRows == 3)
        #expect(try db.execute("SELECT 1").affectedRows == 1)
        #expect(try db.execute("BEGIN").affectedRows == 0)
        try db.execute("ROLLBACK")  // no stderr noise from notices either way
    }
}
