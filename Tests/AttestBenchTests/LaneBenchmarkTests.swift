import AttestCLI
import AttestCore
import Foundation
import PostgresClient
import Testing

@testable import attest_bench

/// The lane benchmark's split of a batch's CPU into a fixed part and a part per job.
@Suite struct LaneBenchmarkTests {
    static func size(_ size: Int, cpuMsPerBatch: Double) -> LaneBenchmark.SizeCost {
        LaneBenchmark.SizeCost(
            size: size, batches: 10, jobs: 10 * size, workerCpuSeconds: cpuMsPerBatch * 10 / 1000, postgresCpuSeconds: nil,
            batchWallP50Ms: 1)
    }

    /// Batches costing exactly 0.4 ms plus 0.2 ms a job give back those two figures.
    @Test func anExactLineIsFoundAgain() {
        let results = LaneBenchmark.Results(
            sizes: [1, 4, 16, 64, 512].map { Self.size($0, cpuMsPerBatch: 0.4 + 0.2 * Double($0)) }, inProcessCpuMsPerJob: 0.1,
            unexpected: 0)
        #expect(abs(results.line.fixedMs - 0.4) < 1e-9)
        #expect(abs(results.line.perJobMs - 0.2) < 1e-9)
    }

    /// The fit weighs each size alike: a large batch's noise, a small share of its own cost, does not move
    /// the fixed part the way an unweighted fit of the cost per batch would.
    @Test func theLargestBatchDoesNotDecideTheFixedPart() {
        let sizes = [1, 4, 16, 64].map { Self.size($0, cpuMsPerBatch: 0.4 + 0.2 * Double($0)) }
            + [Self.size(512, cpuMsPerBatch: (0.4 + 0.2 * 512) * 1.05)]
        let line = LaneBenchmark.Results(sizes: sizes, inProcessCpuMsPerJob: 0.1, unexpected: 0).line
        let unweighted = LaneBenchmark.leastSquares(sizes.map { (Double($0.size), $0.workerCpuMsPerBatch) })
        #expect(abs(line.fixedMs - 0.4) < abs(unweighted.intercept - 0.4))
    }

    @Test func oneSizeHasNoSlope() {
        let fit = LaneBenchmark.leastSquares([(2, 3), (2, 5)])
        #expect(fit.slope == 0)
        #expect(fit.intercept == 4)
    }
}

/// `attest-bench lane --stored-days`: the options, and the schema of filled partitions it runs in.
@Suite struct StoredVerdictsSchemaTests {
    private static func options(_ extra: [String]) throws -> LaneBenchmark.Options {
        var args = Arguments(["--database-url", "postgresql://nowhere/none"] + extra)
        return try LaneBenchmark.Options(&args)
    }

    @Test func storedDaysAreOffByDefaultAndBounded() throws {
        let plain = try Self.options([])
        #expect(plain.storedDays == 0 && plain.storedRows == 5000)
        let set = try Self.options(["--stored-days", "8", "--stored-rows", "100"])
        #expect(set.storedDays == 8 && set.storedRows == 100)
        for bad in [
            ["--stored-days", "401"], ["--stored-days", "-1"], ["--stored-rows", "-1"], ["--stored-rows", "10000001"],
            ["--stored-days", "many"],
        ] {
            #expect(throws: Arguments.UsageError.self) { try Self.options(bad) }
        }
    }

    /// Two filled days, today's and 3 ahead empty, DEFAULT; every row in a day before today's, of an app no
    /// run uses; and nothing left once dropped.
    @Test func theSchemaHoldsTheFilledDaysAndIsDroppedWhole() throws {
        let url = try #require(ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"], "run ops/stack up and eval \"$(ops/stack env)\"")
        let now = Timestamp(seconds: 1_796_083_200 + 3_600)
        let runId = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let schema = try StoredVerdictsSchema(databaseURL: url, runId: runId, days: 2, rows: 10, now: now)
        let admin = try PGConnection(conninfo: url)
        let partitions = try admin.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass($1)", [.text("\(schema.name).verdicts")]).int(0, 0)
        #expect(partitions == Int64(2 + 1 + StoredVerdictsSchema.ahead + 1))
        let rows = try admin.execute(
            "SELECT count(*), count(*) FILTER (WHERE partition_at < to_timestamp(1796083200) AND bundle_id = 'bench.lane.stored') FROM \(schema.name).verdicts")
        #expect(rows.int(0, 0) == 20 && rows.int(0, 1) == 20)
        try schema.drop()
        #expect(try admin.execute("SELECT to_regnamespace($1) IS NULL", [.text(schema.name)]).bool(0, 0) == true)
    }
}
