import Durations
import Foundation

/// A body run now and then every `interval` on a thread of its own, until stopped: the loop of the
/// background components (the database probe, the purger). Stopping wakes the wait at once and joins the
/// thread, so a stop waits at most for the round in progress.
public final class PeriodicTask: @unchecked Sendable {
    private let interval: Duration
    private let body: @Sendable () -> Void
    /// Guards `stopped` and `thread`; the loop waits on it between rounds.
    private let condition = NSCondition()
    private var stopped = false
    private var thread: JoinableThread?

    public init(every interval: Duration, _ body: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.body = body
    }

    /// Starts the loop; does nothing when started before or stopped.
    public func start() {
        condition.lock()
        defer { condition.unlock() }
        guard thread == nil, !stopped else { return }
        thread = JoinableThread { [self] in loop() }
    }

    /// Ends the loop after the round in progress and joins its thread; idempotent, and harmless before
    /// `start` (which then does nothing).
    public func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        let running = thread
        thread = nil
        condition.unlock()
        running?.join()
    }

    private func loop() {
        while true {
            body()
            let until = Date().addingTimeInterval(interval.timeInterval)
            condition.lock()
            while !stopped, condition.wait(until: until) {}
            let done = stopped
            condition.unlock()
            if done { return }
        }
    }
}
