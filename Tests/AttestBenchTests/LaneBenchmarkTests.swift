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
