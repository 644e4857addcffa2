/// Capped exponential backoff: `initial`, doubled after each further failure up to `cap`, so a retry loop
/// neither hammers a failing database nor notices its return more than `cap` late. Pure: the caller sleeps.
public struct Backoff: Sendable, Equatable {
    public let initial: Duration
    public let cap: Duration
    private var current: Duration

    public init(initial: Duration, cap: Duration) {
        precondition(initial > .zero && cap >= initial, "backoff must be positive, cap >= start")
        self.initial = initial
        self.cap = cap
        current = initial
    }

    /// The wait before the next attempt; each call doubles the following one, up to the cap.
    public mutating func next() -> Duration {
        defer { current = current > cap / 2 ? cap : current * 2 }
        return current
    }

    /// Back to `initial`, after a success.
    public mutating func reset() { current = initial }
}
