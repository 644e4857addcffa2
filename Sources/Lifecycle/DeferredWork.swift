import Foundation

/// An owned thread for work that must not run where it arises (a producer's delivery callback must not
/// wait for the producer's own queue) or must wait first (a retry's backoff): items run one at a time, in
/// the order they fall due. Unlike a global dispatch queue it belongs to a component and ends with it:
/// ``stop()`` drops what has not run and joins the thread.
public final class DeferredWork: @unchecked Sendable {
    private struct Item {
        let due: ContinuousClock.Instant
        let work: @Sendable () -> Void
    }

    private let name: String
    /// Guards the fields below; the thread waits on it for the next item.
    private let condition = NSCondition()
    /// By due time, first submitted first among equals.
    private var items: [Item] = []
    private var stopped = false
    private var thread: JoinableThread?

    public init(name: String) {
        self.name = name
    }

    /// Starts the thread; does nothing when started before or stopped. True when this call started it.
    @discardableResult
    public func start() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard thread == nil, !stopped else { return false }
        thread = JoinableThread(name: name) { [self] in loop() }
        return true
    }

    /// Runs `work` on the thread once `delay` has passed; dropped once stopped.
    public func submit(after delay: Duration = .zero, _ work: @escaping @Sendable () -> Void) {
        let item = Item(due: .now + delay, work: work)
        condition.lock()
        defer { condition.unlock() }
        guard !stopped else { return }
        // After every item due no later: equal times keep their submission order.
        var low = 0
        var high = items.count
        while low < high {
            let middle = (low + high) / 2
            if items[middle].due <= item.due { low = middle + 1 } else { high = middle }
        }
        items.insert(item, at: low)
        condition.broadcast()
    }

    /// Drops the items that have not run, waits for the one running and joins the thread; idempotent, and
    /// harmless before ``start()`` (which then does nothing). Not from the thread's own work.
    public func stop() {
        condition.lock()
        stopped = true
        items = []
        condition.broadcast()
        let running = thread
        thread = nil
        condition.unlock()
        running?.join()
    }

    private func loop() {
        condition.lock()
        while !stopped {
            guard let first = items.first else {
                condition.wait()
                continue
            }
            if first.due > .now {
                _ = condition.wait(until: first.due)
                continue
            }
            items.removeFirst()
            condition.unlock()
            first.work()
            condition.lock()
        }
        condition.unlock()
    }
}
