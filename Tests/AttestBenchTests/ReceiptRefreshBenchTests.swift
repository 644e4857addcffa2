import AttestCLI
import Testing

@testable import attest_bench

/// The pipeline benchmark's receipt refresh options and its reading of `attest_receipt_refreshes_total`.
@Suite struct ReceiptRefreshBenchTests {
    static func parse(_ words: [String]) throws -> ReceiptRefreshBench.Endpoint? {
        var args = Arguments(words)
        return try ReceiptRefreshBench.Endpoint.parse(&args)
    }

    @Test func endpointOptions() throws {
        #expect(try Self.parse([]) == nil)
        #expect(try Self.parse(["--receipt-refresh-delay-seconds", "5"]) == .slow(delaySeconds: 5))
        #expect(try Self.parse(["--receipt-refresh-delay-seconds", "0"]) == .slow(delaySeconds: 0))
        #expect(try Self.parse(["--receipt-refresh-dead"]) == .dead)
    }

    /// Past the stand-in's limit, negative, not a number, or both at once: a usage error, not a run.
    @Test func refusesBadEndpointOptions() {
        for words in [
            ["--receipt-refresh-delay-seconds", "26"], ["--receipt-refresh-delay-seconds", "-1"],
            ["--receipt-refresh-delay-seconds", "5s"], ["--receipt-refresh-delay-seconds", "99999999999999999999"],
            ["--receipt-refresh-delay-seconds", "5", "--receipt-refresh-dead"],
        ] {
            #expect(throws: Arguments.UsageError.self, "\(words)") { try Self.parse(words) }
        }
    }

    @Test func countsRefreshesByOutcome() {
        let exposition = """
            # HELP attest_receipt_refreshes_total Receipt refresh tries, by how they ended (receipt_refresh.last_status).
            # TYPE attest_receipt_refreshes_total counter
            attest_receipt_refreshes_total{outcome="refreshed"} 7
            attest_receipt_refreshes_total{outcome="retry_later"} 3
            attest_receipt_refreshes_total_other{outcome="refreshed"} 100
            attest_job_stage_seconds_bucket{stage="broker",le="0.01"} 5
            """
        #expect(ReceiptRefreshBench.refreshes(exposition: exposition) == ["refreshed": 7, "retry_later": 3])
    }

    /// Lines that do not parse count nothing; a huge or negative value is not a count.
    @Test func skipsMalformedLines() {
        let exposition = """
            attest_receipt_refreshes_total{outcome="refreshed"} x
            attest_receipt_refreshes_total{outcome=refreshed} 4
            attest_receipt_refreshes_total{outcome="idle"} -2
            attest_receipt_refreshes_total{outcome="waiting"} 1e300
            attest_receipt_refreshes_total{outcome="rejected" 2
            attest_receipt_refreshes_total{outcome="no_data"} 2
            """
        #expect(ReceiptRefreshBench.refreshes(exposition: exposition) == ["no_data": 2])
    }
}
