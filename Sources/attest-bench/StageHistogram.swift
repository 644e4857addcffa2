/// The worker's `attest_job_stage_seconds` histogram as /metrics shows it, per stage: the cumulative count
/// at each bucket bound. Two scrapes around a phase differ by the jobs of that phase, and a quantile of the
/// difference is known to its bucket: the bound at or above which it lies.
struct StageHistogram {
    static let metric = "attest_job_stage_seconds"

    /// Per stage, (upper bound in seconds, cumulative count), in the order /metrics lists them (bounds
    /// rising, +Inf last).
    var stages: [String: [(bound: Double, count: UInt64)]] = [:]

    /// The stage buckets of a Prometheus text exposition; other lines, and bucket lines that do not parse,
    /// are skipped (the worker writes the labels as `stage="…",le="…"`).
    init(exposition: String) {
        for sample in Exposition.samples(of: Self.metric + "_bucket", in: exposition) {
            guard let stage = Exposition.label("stage", in: sample.labels), let le = Exposition.label("le", in: sample.labels),
                let bound = le == "+Inf" ? Double.infinity : Double(le), let count = UInt64(sample.value)
            else { continue }
            stages[stage, default: []].append((bound, count))
        }
    }

    private init(stages: [String: [(bound: Double, count: UInt64)]]) { self.stages = stages }

    /// What was observed between `before` and this scrape, per stage (a stage absent before counts from zero;
    /// a counter that went down, a restarted worker, counts nothing).
    func since(_ before: StageHistogram) -> StageHistogram {
        var result = [String: [(bound: Double, count: UInt64)]]()
        for (stage, buckets) in stages {
            let earlier = before.stages[stage] ?? []
            result[stage] = buckets.map { bucket in
                let then = earlier.first { $0.bound == bucket.bound }?.count ?? 0
                return (bucket.bound, bucket.count >= then ? bucket.count - then : 0)
            }
        }
        return StageHistogram(stages: result)
    }

    /// The upper bound, in milliseconds, of the bucket holding the stage's `p` quantile (nearest rank); nil
    /// when the stage saw nothing or the quantile lies past the last finite bound.
    func quantileMs(_ stage: String, _ p: Double) -> Double? {
        guard let buckets = stages[stage], let total = buckets.last?.count, total > 0 else { return nil }
        let rank = max(1, UInt64((p * Double(total)).rounded(.up)))
        guard let bucket = buckets.first(where: { $0.count >= rank }), bucket.bound.isFinite else { return nil }
        // To the microsecond: a bound such as 0.02 s is not exact in binary.
        return (bucket.bound * 1_000_000).rounded() / 1000
    }

    /// The stages the worker observes, in a job's order.
    static let order = ["broker", "buffer", "reading", "deciding", "storing", "publish"]
}
