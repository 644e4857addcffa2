import PostgresClient

/// Where a batch's time went that was not deciding: its reads (stored verdicts and devices, apps,
/// challenges, histories and counts) and its commits, summed over every round and every attempt of a
/// retried or split batch. The lane splits each job's stage metrics with it (issue 14: the tail is found
/// by stage, so reading, deciding and storing are told apart rather than merged into one batch time).
public struct BatchTimings: Sendable {
    public var reading: Duration = .zero
    public var storing: Duration = .zero

    public init() {}

    /// Runs `body`, adding how long it took to `stage` (`\.reading` or `\.storing`).
    mutating func timed<T>(_ stage: WritableKeyPath<BatchTimings, Duration>, _ body: () throws(PGError) -> T) throws(PGError) -> T {
        let started = ContinuousClock.now
        defer { self[keyPath: stage] += ContinuousClock.now - started }
        return try body()
    }
}
