import AttestCLI
import AttestCore
import Testing

@testable import attest_bench

/// `attest-bench relay`'s command line and what it reports.
@Suite struct RelayBenchmarkTests {
    private static func options(_ extra: [String]) throws -> RelayBenchmark.Options {
        var args = Arguments(["--brokers", "127.0.0.1:1"] + extra)
        return try RelayBenchmark.Options(&args)
    }

    @Test func defaultsAreThePipelinesLatencyPhaseAtOneHundred() throws {
        let options = try Self.options([])
        #expect(options.rate == 100)
        #expect(options.seconds == 10)
        #expect(options.fetchWaitMs == 1)
        #expect(options.bytes == 1000)
        #expect(options.topicPrefix == nil)
    }

    @Test func refusesRatesSizesAndWaitsOutOfRange() {
        for bad in [["--rate", "0"], ["--seconds", "0"], ["--bytes", "0"], ["--fetch-wait-ms", "-1"], ["--rate", "fast"]] {
            #expect(throws: Arguments.UsageError.self) { try Self.options(bad) }
        }
    }

    @Test func theJSONHasTheMembersItsHelpNames() throws {
        let results = RelayBenchmark.Results(
            options: try Self.options(["--rate", "300"]), jobs: 3, lost: 1, refused: 0, latencies: [4.25, 5.0, 9.96],
            stages: LatencyStages([
                .init(sentMs: 0, acknowledgedMs: 1, createdMs: 3, readMs: 5),
                .init(sentMs: 0, acknowledgedMs: 2, createdMs: 4, readMs: 9),
            ]))
        guard case .object(let members) = results.json else {
            Issue.record("not an object")
            return
        }
        #expect(members.map(\.0) == [
            "rate", "fetchWaitMs", "bytes", "jobs", "lost", "p50Ms", "p99Ms", "toRelayedP50Ms", "toRelayedP99Ms",
            "producingP50Ms", "producingP99Ms", "tripP50Ms", "tripP99Ms",
        ])
        for name in members.map(\.0) { #expect(RelayBenchmark.help.contains("\"\(name)\"")) }
        let value = Dictionary(members) { first, _ in first }
        #expect(value["rate"] == .int(300))
        #expect(value["p50Ms"] == .double(5.0))
        #expect(value["p99Ms"] == .double(10.0))
        #expect(value["toRelayedP99Ms"] == .double(4))
        #expect(value["tripP50Ms"] == .double(2))
        #expect(value["tripP99Ms"] == .double(5))
    }
}
