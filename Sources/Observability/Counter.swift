/// A Prometheus counter family: values that only go up (jobs consumed, verdicts, errors). Name it with a
/// `_total` suffix. Created once through ``MetricsRegistry/counter(_:help:labelNames:maxSeries:)``.
public final class Counter: MetricFamily, Sendable {
    /// One labelled series. Cache it where it is used on a hot path: ``Counter/labels(_:)`` hashes the
    /// label values on every call.
    public final class Series: Sendable {
        private let total = AtomicDouble()

        init() {}

        /// Adds `amount`; negative or NaN amounts are ignored (a counter never goes down).
        public func increment(by amount: Double = 1) {
            guard amount >= 0 else { return }
            total.add(amount)
        }

        public var value: Double { total.value }
    }

    public let name: String
    let help: String
    let table: MetricSeriesTable<Series>

    init(name: String, help: String, labelNames: [String], maxSeries: Int) {
        self.name = name
        self.help = help
        self.table = MetricSeriesTable(name: name, labelNames: labelNames, maxSeries: maxSeries) { Series() }
    }

    public var labelNames: [String] { table.labelNames }

    /// The series for these label values, one per label name in order: `verdicts.labels(["attestation", "ok", ""])`.
    public func labels(_ values: [String]) -> Series { table.lookup(values) }

    /// Increments the series of a family without labels.
    public func increment(by amount: Double = 1) { table.lookup([]).increment(by: amount) }

    /// The value of a family without labels.
    public var value: Double { table.lookup([]).value }

    var sampleNames: [String] { [name] }

    func render(into text: inout String) {
        PrometheusText.header(into: &text, name: name, help: help, type: "counter")
        for (values, series) in table.snapshot() {
            text +=
                "\(name)\(PrometheusText.labelSet(table.labelNames, values)) \(PrometheusText.format(series.value))\n"
        }
    }
}
