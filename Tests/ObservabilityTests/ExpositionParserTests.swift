import Testing

/// The strict reader is only worth its name if it refuses: each case breaks one rule of the format.
@Suite("The strict exposition reader used by these tests")
struct ExpositionParserTests {
    static let valid = """
        # HELP a_total h
        # TYPE a_total counter
        a_total{k="v"} 1
        # HELP h h
        # TYPE h histogram
        h_bucket{le="1"} 1
        h_bucket{le="+Inf"} 2
        h_sum 3
        h_count 2

        """

    @Test("accepts well-formed text")
    func accepts() throws {
        let parsed = try Exposition(parsing: Self.valid)
        #expect(parsed.value("a_total", ["k": "v"]) == 1)
        #expect(parsed.value("h_count") == 2)
    }

    @Test(
        "refuses each broken rule",
        arguments: [
            ("no final line feed", "# HELP a h\n# TYPE a gauge\na 1"),
            ("blank line", "# HELP a h\n# TYPE a gauge\n\na 1\n"),
            ("sample before TYPE", "a 1\n"),
            ("TYPE without HELP", "# TYPE a gauge\na 1\n"),
            ("unknown type", "# HELP a h\n# TYPE a summaryish\n"),
            ("foreign sample", "# HELP a h\n# TYPE a gauge\nb 1\n"),
            ("duplicate series", "# HELP a h\n# TYPE a gauge\na{k=\"v\"} 1\na{k=\"v\"} 2\n"),
            ("bad escape", "# HELP a h\n# TYPE a gauge\na{k=\"\\t\"} 1\n"),
            ("unquoted value", "# HELP a h\n# TYPE a gauge\na{k=v} 1\n"),
            ("trailing comma", "# HELP a h\n# TYPE a gauge\na{k=\"v\",} 1\n"),
            ("timestamp", "# HELP a h\n# TYPE a gauge\na 1 1700000000\n"),
            ("bad value", "# HELP a h\n# TYPE a gauge\na one\n"),
            ("negative counter", "# HELP a h\n# TYPE a counter\na -1\n"),
            ("bad metric name", "# HELP 1a h\n# TYPE 1a gauge\n"),
            ("reserved label", "# HELP a h\n# TYPE a gauge\na{__k=\"v\"} 1\n"),
            ("histogram without +Inf", "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n"),
            (
                "histogram count differs",
                "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n"
            ),
            (
                "histogram not cumulative",
                "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n"
            ),
            ("le outside buckets", "# HELP h h\n# TYPE h histogram\nh_sum{le=\"1\"} 1\n"),
            ("other comment", "# a comment\n"),
        ]
    )
    func refuses(rule: String, text: String) {
        #expect(throws: Exposition.Violation.self, "\(rule)") { try Exposition(parsing: text) }
    }
}
