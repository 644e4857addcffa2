/// A series that holds one value: a counter's or a gauge's.
public protocol ValueSeries: AnyObject, Sendable {
    /// The family's Prometheus type, `counter` or `gauge`.
    static var type: String { get }
    init()
    var value: Double { get }
}

/// A Prometheus family whose series each hold one value (``Counter``, ``Gauge``): the series table, the
/// label lookup and the rendering they share. Created once through the ``MetricsRegistry``.
public final class ValueFamily<Series: ValueSeries>: MetricFamily, Sendable {
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
    /// Cache it where it is used on a hot path: this hashes the label values on every call.
    public func labels(_ values: [String]) -> Series { table.lookup(values) }

    /// The series of a family without labels.
    public var unlabelled: Series { table.lookup([]) }

    /// The value of a family without labels.
    public var value: Double { unlabelled.value }

    var sampleNames: [String] { [name] }

    func render(into text: inout String) {
        PrometheusText.header(into: &text, name: name, help: help, type: Series.type)
        for (values, series) in table.snapshot() {
            text += "\(name)\(PrometheusText.labelSet(table.labelNames, values)) \(PrometheusText.format(series.value))\n"
        }
    }
}
