import Durations

/// A Prometheus histogram family with fixed buckets: latencies in seconds, or sizes (batch sizes) with
/// buckets to match. Created once through ``MetricsRegistry/histogram(_:help:labelNames:buckets:maxSeries:)``.
public final class Histogram: MetricFamily, Sendable {
    /// Prometheus' default latency buckets, in seconds.
    public static let defaultBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// `count` bounds `start`, `start × factor`, `start × factor²`, … (for sizes: 1, 2, 4, … 1024).
    public static func exponentialBuckets(start: Double, factor: Double, count: Int) -> [Double] {
        precondition(start > 0 && factor > 1 && count >= 1, "exponentialBuckets: start > 0, factor > 1, count >= 1")
        var bounds: [Double] = []
        var bound = start
        for _ in 0..<count {
            bounds.append(bound)
            bound *= factor
        }
        return bounds
    }

    /// One labelled series. Cache it where it is used on a hot path: ``Histogram/labels(_:)`` hashes the
    /// label values on every call.
    ///
    /// Lock-free: one atomic count per bucket and an atomic sum. The count is the sum of the buckets, so a
    /// scrape always sees buckets consistent with the count; the sum may include an observation or two that
    /// the buckets do not show yet (or the reverse), which rates over scrape intervals do not notice.
    public final class Series: Sendable {
        private let bounds: [Double]
        /// Per bucket (not cumulative), the last one for observations above every bound (+Inf).
        private let counts: [AtomicCount]
        private let total = AtomicDouble()

        init(bounds: [Double]) {
            self.bounds = bounds
            self.counts = (0...bounds.count).map { _ in AtomicCount() }
        }

        /// Records one observation (seconds for latencies); NaN is ignored.
        public func observe(_ value: Double) {
            observe(value, count: 1)
        }

        /// Records `count` observations of the same value at once (each job of a batch waits the batch's
        /// time); NaN, and a count below 1, are ignored.
        public func observe(_ value: Double, count: Int) {
            guard !value.isNaN, count > 0 else { return }
            // Buckets are inclusive upper bounds (`le`): the first bound >= value.
            var low = 0
            var high = bounds.count
            while low < high {
                let middle = (low + high) / 2
                if bounds[middle] >= value { high = middle } else { low = middle + 1 }
            }
            counts[low].add(UInt64(count))
            total.add(value * Double(count))
        }

        /// Records a duration in seconds.
        public func observe(_ duration: Duration) {
            observe(duration.timeInterval)
        }

        /// Runs `body` and records how long it took.
        public func time<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
            let start = ContinuousClock.now
            defer { observe(ContinuousClock.now - start) }
            return try body()
        }

        /// Cumulative bucket counts (the last is +Inf, equal to the count) and the sum.
        var snapshot: (cumulative: [UInt64], sum: Double) {
            var running: UInt64 = 0
            let cumulative = counts.map { count in
                running += count.value
                return running
            }
            return (cumulative, total.value)
        }

        public var count: UInt64 { counts.reduce(0) { $0 + $1.value } }
        public var sum: Double { total.value }
    }

    public let name: String
    let help: String
    public let buckets: [Double]
    let table: MetricSeriesTable<Series>

    init(name: String, help: String, labelNames: [String], buckets: [Double], maxSeries: Int) {
        precondition(
            buckets.allSatisfy(\.isFinite),
            "histogram \(name): bucket bounds must be finite (+Inf is implicit)"
        )
        precondition(
            zip(buckets, buckets.dropFirst()).allSatisfy { $0 < $1 },
            "histogram \(name): bucket bounds must increase"
        )
        self.name = name
        self.help = help
        self.buckets = buckets
        self.table = MetricSeriesTable(name: name, labelNames: labelNames, maxSeries: maxSeries, reserved: ["le"]) {
            Series(bounds: buckets)
        }
    }

    public var labelNames: [String] { table.labelNames }

    /// The series for these label values, one per label name in order.
    public func labels(_ values: [String]) -> Series { table.lookup(values) }

    /// Records into the series of a family without labels.
    public func observe(_ value: Double) { table.lookup([]).observe(value) }
    public func observe(_ duration: Duration) { table.lookup([]).observe(duration) }

    var sampleNames: [String] { [name + "_bucket", name + "_sum", name + "_count", name] }

    func render(into text: inout String) {
        PrometheusText.header(into: &text, name: name, help: help, type: "histogram")
        let bounds = buckets.map(PrometheusText.format) + ["+Inf"]
        for (values, series) in table.snapshot() {
            let (cumulative, sum) = series.snapshot
            for (bound, count) in zip(bounds, cumulative) {
                let labels = PrometheusText.labelSet(table.labelNames, values, extra: ("le", bound))
                text += "\(name)_bucket\(labels) \(count)\n"
            }
            let labels = PrometheusText.labelSet(table.labelNames, values)
            text += "\(name)_sum\(labels) \(PrometheusText.format(sum))\n"
            text += "\(name)_count\(labels) \(cumulative.last ?? 0)\n"
        }
    }
}
