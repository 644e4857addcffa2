/// A Prometheus counter family: values that only go up (jobs consumed, verdicts, errors). Name it with a
/// `_total` suffix. Created once through ``MetricsRegistry/counter(_:help:labelNames:maxSeries:)``.
public typealias Counter = ValueFamily<CounterSeries>

/// One labelled series of a ``Counter``.
public final class CounterSeries: ValueSeries {
    public static var type: String { "counter" }
    private let total = AtomicDouble()

    public init() {}

    /// Adds `amount`; negative or NaN amounts are ignored (a counter never goes down).
    public func increment(by amount: Double = 1) {
        guard amount >= 0 else { return }
        total.add(amount)
    }

    public var value: Double { total.value }
}

extension ValueFamily where Series == CounterSeries {
    /// Increments the series of a family without labels.
    public func increment(by amount: Double = 1) { unlabelled.increment(by: amount) }
}
