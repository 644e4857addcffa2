import Synchronization

/// What the registry renders: one metric family.
protocol MetricFamily: AnyObject, Sendable {
    var name: String { get }
    /// Every sample name the family writes, so that two families cannot collide.
    var sampleNames: [String] { get }
    func render(into text: inout String)
}

/// The process's metrics, rendered in the Prometheus text exposition format 0.0.4 for `GET /metrics`.
///
/// Metrics are created once at start (a second registration of a name is a programming error and traps)
/// with fixed label names, then updated from any thread without locks (atomics only; registration and
/// rendering take the registry's lock). Label values must come from bounded sets; see ``MetricSeriesTable``.
public final class MetricsRegistry: Sendable {
    /// The `Content-Type` of the rendered text.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Series per family unless given: verdicts by kind × code × reason stay well below it. Each labelled
    /// family holds a table sized for its bound (about 40 bytes a series, doubled).
    public static let defaultMaxSeries = 256

    private struct State {
        var families: [any MetricFamily] = []
        var sampleNames: Set<String> = []
        var collectors: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())

    public init() {}

    public func counter(
        _ name: String,
        help: String,
        labelNames: [String] = [],
        maxSeries: Int = defaultMaxSeries
    ) -> Counter {
        register(Counter(name: checked(name), help: help, labelNames: labelNames, maxSeries: maxSeries))
    }

    public func gauge(
        _ name: String,
        help: String,
        labelNames: [String] = [],
        maxSeries: Int = defaultMaxSeries
    ) -> Gauge {
        register(Gauge(name: checked(name), help: help, labelNames: labelNames, maxSeries: maxSeries))
    }

    /// - Parameter buckets: increasing finite upper bounds; `+Inf` is added.
    public func histogram(
        _ name: String,
        help: String,
        labelNames: [String] = [],
        buckets: [Double] = Histogram.defaultBuckets,
        maxSeries: Int = defaultMaxSeries
    ) -> Histogram {
        register(
            Histogram(name: checked(name), help: help, labelNames: labelNames, buckets: buckets, maxSeries: maxSeries)
        )
    }

    /// Runs `collector` at the start of every ``render()``, on the scraping thread: the place to copy values
    /// that are cheaper to read than to push (consumer lag, buffer depth) into gauges. Keep it quick and
    /// non-blocking; it must not register metrics.
    public func onCollect(_ collector: @escaping @Sendable () -> Void) {
        state.withLock { $0.collectors.append(collector) }
    }

    /// The exposition text: families in registration order, series ordered by label values.
    public func render() -> String {
        let collectors = state.withLock { $0.collectors }
        for collect in collectors { collect() }
        let families = state.withLock { $0.families }
        var text = ""
        for family in families { family.render(into: &text) }
        return text
    }

    private func checked(_ name: String) -> String {
        precondition(PrometheusText.isValidMetricName(name), "invalid metric name \"\(name)\"")
        return name
    }

    private func register<Family: MetricFamily>(_ family: Family) -> Family {
        state.withLock { state in
            for sample in family.sampleNames {
                precondition(!state.sampleNames.contains(sample), "metric name \"\(sample)\" registered twice")
            }
            state.sampleNames.formUnion(family.sampleNames)
            state.families.append(family)
        }
        return family
    }
}
