/// A Prometheus gauge family: values that go up and down (in-flight jobs, consumer lag, buffer depth).
/// Created once through ``MetricsRegistry/gauge(_:help:labelNames:maxSeries:)``.
public typealias Gauge = ValueFamily<GaugeSeries>

/// One labelled series of a ``Gauge``.
public final class GaugeSeries: ValueSeries {
    public static var type: String { "gauge" }
    private let current = AtomicDouble()

    public init() {}

    public func set(_ value: Double) { current.store(value) }
    public func increment(by amount: Double = 1) { current.add(amount) }
    public func decrement(by amount: Double = 1) { current.add(-amount) }
    public var value: Double { current.value }
}

extension ValueFamily where Series == GaugeSeries {
    /// The series of a family without labels.
    public func set(_ value: Double) { unlabelled.set(value) }
    public func increment(by amount: Double = 1) { unlabelled.increment(by: amount) }
    public func decrement(by amount: Double = 1) { unlabelled.decrement(by: amount) }
}
