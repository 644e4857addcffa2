import Foundation

/// The source of "now", injected so that tests and the offline verifier can pin time.
public protocol Clock: Sendable {
    func now() -> Timestamp
}

/// The system's wall clock.
public struct SystemClock: Clock {
    public init() {}

    public func now() -> Timestamp {
        Timestamp(microseconds: Int64((Date().timeIntervalSince1970 * 1_000_000).rounded()))
    }
}

/// A clock that always reads the same instant.
public struct FixedClock: Clock {
    public let instant: Timestamp

    public init(_ instant: Timestamp) {
        self.instant = instant
    }

    public func now() -> Timestamp { instant }
}
