/// A body run now and then every `interval` on a thread of its own, until stopped: the loop of the
/// background components (the database probe, the purger, the HTTP deadline sweep). Each round schedules
/// the next on a ``DeferredWork``, so stopping drops the wait at once and joins the thread: a stop waits at
/// most for the round in progress.
public final class PeriodicTask: Sendable {
    private let interval: Duration
    private let body: @Sendable () -> Void
    private let work: DeferredWork

    public init(name: String, every interval: Duration, _ body: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.body = body
        work = DeferredWork(name: name)
    }

    /// Starts the rounds; does nothing when started before or stopped.
    public func start() {
        if work.start() { work.submit { [self] in round() } }
    }

    /// Ends the rounds after the one in progress and joins the thread; idempotent, and harmless before
    /// `start` (which then does nothing).
    public func stop() { work.stop() }

    private func round() {
        body()
        work.submit(after: interval) { [self] in round() }
    }
}
