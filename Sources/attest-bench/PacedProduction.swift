import Dispatch
import Foundation
import Synchronization

/// Jobs produced evenly spaced at a rate and read back by a ``VerdictCollector``: the latency phase of
/// `pipeline` (verdicts from the worker) and of `relay` (records relayed with no worker).
enum PacedProduction {
    /// Produces `jobs` at `rate` a second, then runs `settle` (which waits for what they bring back), and
    /// returns each job's latency from being handed to the producer to its answer being read, in
    /// milliseconds, sorted, and the same split at the answer's create time. Jobs without an answer are left
    /// out of both.
    static func run(
        _ jobs: [PipelineWorkload.Message], rate: Double, producer: JobProducer, reader: VerdictCollector, settle: () throws -> Void
    ) throws -> (latencies: [Double], stages: LatencyStages) {
        reader.expect(jobs.map(\.jobId))
        var sentAt = [UInt64](repeating: 0, count: jobs.count)
        var sentWallMs = [Int64](repeating: 0, count: jobs.count)
        let acknowledgedMs = Mutex([Int64?](repeating: nil, count: jobs.count))
        let start = DispatchTime.now().uptimeNanoseconds
        for (i, message) in jobs.enumerated() {
            let due = start + UInt64(Double(i) / rate * 1e9)
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { Thread.sleep(forTimeInterval: Double(due - now) / 1e9) }
            sentAt[i] = DispatchTime.now().uptimeNanoseconds
            sentWallMs[i] = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
            try producer.send(message) { ms in acknowledgedMs.withLock { $0[i] = ms } }
        }
        try producer.flush()
        try settle()
        let acknowledged = acknowledgedMs.withLock { $0 }
        let records = reader.records
        let latencies = jobs.indices.compactMap { i in records[jobs[i].jobId].map { Double($0.firstSeen - sentAt[i]) / 1e6 } }.sorted()
        let stages = LatencyStages(jobs.indices.compactMap { i in
            records[jobs[i].jobId].map {
                LatencyStages.Sample(sentMs: sentWallMs[i], acknowledgedMs: acknowledged[i], createdMs: $0.createdMs, readMs: $0.firstSeenWallMs)
            }
        })
        return (latencies, stages)
    }
}
