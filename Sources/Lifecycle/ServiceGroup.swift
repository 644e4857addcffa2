import Foundation

/// Runs the process's components: starts them in the given order, waits until a graceful shutdown is
/// asked for (a signal) or one of them fails, then stops the started ones in reverse order, each after the
/// one started after it has finished, all within one shutdown deadline. The model is
/// swift-service-lifecycle's `ServiceGroup`, for threads instead of tasks.
///
/// - A component that cannot start, or fails later, ends the group: nothing after it is started, the
///   started ones (itself included, once started) are stopped in reverse order, and ``run()`` throws
///   ``ServiceGroupError/failed(service:error:)`` with the first failure.
/// - A shutdown asked for before ``run()`` starts nothing.
/// - Stopping runs on a thread of its own, so a component that does not stop by the deadline cannot hold
///   the process: ``run()`` throws ``ServiceGroupError/shutdownTimedOut(service:)`` at the deadline, and
///   the caller exits (what was stored before is safe; the rest is redelivered).
public final class ServiceGroup: @unchecked Sendable {
    /// What the group does, for the log.
    public enum Event: Sendable {
        case started(String)
        case stopping(String)
        case stopped(String)
        /// The first failure, which ends the group.
        case failed(String, any Error)
    }

    private let services: [any Service]
    private let shutdownTimeout: Duration
    private let events: @Sendable (Event) -> Void

    /// Guards the fields below; `run()` waits on it.
    private let condition = NSCondition()
    private var shutdownRequested = false
    private var failure: ServiceGroupError?
    /// Set by the first failure before its event is sent; `failure` is set after, so `run()` cannot wake
    /// for a failure, stop everything and return before the failure's event was sent.
    private var failureClaimed = false
    private var running = false
    /// The component being stopped, for the timeout's error; nil once every stop has returned.
    private var stopping: String?
    private var stopsDone = false

    /// - Parameter shutdownTimeout: from the moment the shutdown starts to the last component stopped.
    public init(
        _ services: [any Service], shutdownTimeout: Duration, events: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.services = services
        self.shutdownTimeout = shutdownTimeout
        self.events = events
    }

    /// Asks for the graceful shutdown (signal handlers call this); idempotent, from any thread.
    public func triggerGracefulShutdown() {
        condition.lock()
        shutdownRequested = true
        condition.broadcast()
        condition.unlock()
    }

    /// Starts the components, waits for the shutdown, stops them; returns normally when every started
    /// component stopped in time and none failed. Call once.
    public func run() throws(ServiceGroupError) {
        condition.lock()
        precondition(!running, "ServiceGroup.run() called twice")
        running = true
        condition.unlock()

        var started: [any Service] = []
        for service in services {
            guard !ending else { break }
            do {
                try service.start { [self] error in fail(service.name, error) }
                started.append(service)
                events(.started(service.name))
            } catch {
                fail(service.name, error)
            }
        }
        condition.lock()
        while !shutdownRequested && failure == nil { condition.wait() }
        condition.unlock()
        try stop(Array(started.reversed()))
    }

    /// Stops `services` one after the other on a thread of its own, and waits for it until the deadline.
    private func stop(_ services: [any Service]) throws(ServiceGroupError) {
        let deadline = ContinuousClock.now + shutdownTimeout
        let stopper = JoinableThread { [self] in
            for service in services {
                condition.lock()
                stopping = service.name
                condition.unlock()
                events(.stopping(service.name))
                service.stop(deadline: deadline)
                events(.stopped(service.name))
            }
            condition.lock()
            (stopping, stopsDone) = (nil, true)
            condition.broadcast()
            condition.unlock()
        }
        condition.lock()
        while !stopsDone, condition.wait(until: deadline) {}
        // A failure during the stops whose event is still being sent is the group's failure all the same.
        while stopsDone, failureClaimed, self.failure == nil, condition.wait(until: deadline) {}
        let (done, hung, failure) = (stopsDone, stopping, self.failure)
        condition.unlock()
        guard done else {
            // The hung stop keeps its thread; the caller exits.
            stopper.detach()
            throw .shutdownTimedOut(service: hung ?? "")
        }
        stopper.join()
        if let failure { throw failure }
    }

    /// Whether the group is ending (a shutdown asked for, or a failure taken in, its event maybe still being
    /// sent), read before each start.
    private var ending: Bool {
        condition.lock()
        defer { condition.unlock() }
        return shutdownRequested || failureClaimed
    }

    /// Records the first failure, which ends the group. Its event is sent before the failure is made
    /// visible, so the log reads the failure before the stops it causes.
    private func fail(_ name: String, _ error: any Error) {
        condition.lock()
        let first = !failureClaimed
        failureClaimed = true
        condition.unlock()
        guard first else { return }
        events(.failed(name, error))
        condition.lock()
        failure = .failed(service: name, error: error)
        condition.broadcast()
        condition.unlock()
    }
}

/// Why ``ServiceGroup/run()`` ended other than by a clean shutdown.
public enum ServiceGroupError: Error, CustomStringConvertible {
    /// `service` could not start, or failed while running: the group was stopped.
    case failed(service: String, error: any Error)
    /// `service` had not stopped by the shutdown deadline.
    case shutdownTimedOut(service: String)

    public var description: String {
        switch self {
        case .failed(let service, let error): "\(service) failed: \(error)"
        case .shutdownTimedOut(let service): "\(service) did not stop by the shutdown deadline"
        }
    }
}
