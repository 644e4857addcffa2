/// A Prometheus gauge family: values that go up and down (in-flight jobs, consumer lag, buffer depth).
/// Created once through ``MetricsRegistry/gauge(_:help:labelNames:maxSeries:)``.
public final class Gauge: MetricFamily, Sendable {
    /// One labelled series. Cache it where it is used on a hot path: ``Gauge/labels(_:)`` hashes the label
    /// values on every call.
    public final class Series: Sendable {
        private let current = AtomicDouble()

        init() {}

        public func set(_ value: Double) { current.store(value) }
        public func increment(by amount: Double = 1) { current.add(amount) }
        public func decrement(by amount: Double = 1) { current.add(-amount) }
        public var value: Double { current.value }
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

    /// The series for these label values, one per label name in order.
    public func labels(_ values: [String]) -> Series { table.lookup(values) }

    /// The series of a family without labels.
    public func set(_ value: Double) { table.lookup([]).set(value) }
    public func increment(by amount: Double = 1) { table.lookup([]).increment(by: amount) }
    public func decrement(by amount: Double = 1) { table.lookup([]).decrement(by: amount) }
    public var value: Double { table.lookup([]).value }

    var sampleNames: [String] { [name] }

    func render(into text: inout String) {
        PrometheusText.header(into: &text, name: name, help: help, type: "gauge")
        for (values, series) in table.snapshot() {
            text +=
                "\(name)\(PrometheusText.labelSet(table.labelNames, values)) \(PrometheusText.format(series.value))\n"
        }
    }
}
