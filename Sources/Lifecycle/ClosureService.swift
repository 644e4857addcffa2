/// A ``Service`` made of two closures: for one stage of an object that is several components in the
/// group's order (the worker's producer, consumer, lanes and poll loop share one intake).
public final class ClosureService: Service {
    public let name: String
    private let starts: @Sendable (@escaping @Sendable (any Error) -> Void) throws -> Void
    private let stops: @Sendable (ContinuousClock.Instant) -> Void

    public init(
        _ name: String, start: @escaping @Sendable (@escaping @Sendable (any Error) -> Void) throws -> Void,
        stop: @escaping @Sendable (ContinuousClock.Instant) -> Void
    ) {
        self.name = name
        starts = start
        stops = stop
    }

    public func start(failed: @escaping @Sendable (any Error) -> Void) throws { try starts(failed) }

    public func stop(deadline: ContinuousClock.Instant) { stops(deadline) }
}
