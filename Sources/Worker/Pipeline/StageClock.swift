import AttestCore
import Observability

/// The wall clock the pipeline's stages are timed on, in milliseconds like the broker's create timestamps,
/// and the histogram they go to: injected, so that a test pinning time pins the stages too.
struct StageClock: Sendable {
    let clock: any Clock
    let metrics: WorkerMetrics

    func nowMilliseconds() -> Int64 { clock.now().microseconds / 1000 }

    /// A stage that began at `startMs` (a message's create time, the producer's wall clock, or when it was
    /// consumed); none without one, and a start ahead of `now` counts zero.
    func observe(_ stage: JobStage, since startMs: Int64?, now: Int64) {
        guard let startMs else { return }
        metrics.stage(stage).observe(Double(max(0, now &- startMs)) / 1000)
    }
}
