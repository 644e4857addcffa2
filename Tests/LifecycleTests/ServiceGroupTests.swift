import Foundation
import Lifecycle
import Synchronization
import Testing

/// What the fake components did, in the order they did it.
final class Journal: Sendable {
    private let entries = Mutex<[String]>([])
    func record(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

struct StartFailure: Error, Equatable { let name: String }
struct RunFailure: Error, Equatable { let name: String }

/// A component that records its start and stop; it can refuse to start, fail once started (or while its
/// start runs), or hang in its stop until released.
final class FakeService: Service, @unchecked Sendable {
    let name: String
    private let journal: Journal
    private let refuseStart: Bool
    private let failWhenStarted: Bool
    private let failWhileStarting: Bool
    private let failWhileStopping: Bool
    /// Held by a hanging stop until signalled.
    let release = DispatchSemaphore(value: 0)
    private let hangs: Bool
    /// The stop's deadline, as the group passed it.
    let deadline = Mutex<ContinuousClock.Instant?>(nil)
    /// The group's failure callback, set before the start is journaled: a test that saw the start finds it.
    private let failedCallback = Mutex<(@Sendable (any Error) -> Void)?>(nil)
    var failed: (@Sendable (any Error) -> Void)? { failedCallback.withLock { $0 } }

    init(
        _ name: String, _ journal: Journal, refuseStart: Bool = false, failWhenStarted: Bool = false, failWhileStarting: Bool = false,
        failWhileStopping: Bool = false, hangs: Bool = false
    ) {
        self.name = name
        self.journal = journal
        self.refuseStart = refuseStart
        self.failWhenStarted = failWhenStarted
        self.failWhileStarting = failWhileStarting
        self.failWhileStopping = failWhileStopping
        self.hangs = hangs
    }

    func start(failed: @escaping @Sendable (any Error) -> Void) throws {
        if refuseStart {
            journal.record("refuse \(name)")
            throw StartFailure(name: name)
        }
        failedCallback.withLock { $0 = failed }
        journal.record("start \(name)")
        if failWhenStarted {
            // From another thread, as a component's own thread would.
            let name = name
            Thread.detachNewThread { failed(RunFailure(name: name)) }
        }
        if failWhileStarting {
            // From another thread, returning once the group has taken the failure in (its event started).
            let name = name
            Thread.detachNewThread { failed(RunFailure(name: name)) }
            _ = eventually { journal.all.contains("failing \(name)") }
        }
    }

    func stop(deadline: ContinuousClock.Instant) {
        self.deadline.withLock { $0 = deadline }
        journal.record("stop \(name)")
        if failWhileStopping, let failed {
            // From another thread, returning once the group has taken the failure in (its event started).
            let name = name
            Thread.detachNewThread { failed(RunFailure(name: name)) }
            _ = eventually { journal.all.contains("failing \(name)") }
        }
        if hangs { release.wait() }
        journal.record("stopped \(name)")
    }
}

/// Runs `group` on a thread of its own; the result arrives on `done`.
final class GroupRun: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let outcome = Mutex<Result<Void, ServiceGroupError>?>(nil)

    init(_ group: ServiceGroup) {
        Thread.detachNewThread { [self] in
            let result = Result { () throws(ServiceGroupError) in try group.run() }
            outcome.withLock { $0 = result }
            done.signal()
        }
    }

    /// The group's result, or nil when it has not ended within `seconds`.
    func wait(seconds: Double = 10) -> Result<Void, ServiceGroupError>? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return outcome.withLock { $0 }
    }
}

/// Waits until `condition` holds, for at most `seconds`.
func eventually(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return condition()
}

@Suite("Service group: ordered start, reverse stop")
struct ServiceGroupTests {
    @Test("components start in order and, on a graceful shutdown, stop in reverse, each after the previous stop returned")
    func orderOfStartAndStop() throws {
        let journal = Journal()
        let names = ["http", "probe", "producer", "lanes", "poll"]
        let group = ServiceGroup(names.map { FakeService($0, journal) }, shutdownTimeout: .seconds(10))
        let run = GroupRun(group)
        #expect(eventually { journal.all.count == names.count })
        #expect(journal.all == names.map { "start \($0)" })
        group.triggerGracefulShutdown()
        let result = try #require(run.wait())
        #expect(throws: Never.self) { try result.get() }
        #expect(journal.all.dropFirst(names.count) == names.reversed().flatMap { ["stop \($0)", "stopped \($0)"] }[...])
    }

    @Test("a component that cannot start: none after it starts, the ones before stop in reverse, run throws its failure")
    func failingStart() throws {
        let journal = Journal()
        let group = ServiceGroup(
            [FakeService("a", journal), FakeService("b", journal), FakeService("c", journal, refuseStart: true), FakeService("d", journal)],
            shutdownTimeout: .seconds(10))
        let result = try #require(GroupRun(group).wait())
        #expect(journal.all == ["start a", "start b", "refuse c", "stop b", "stopped b", "stop a", "stopped a"])
        guard case .failure(.failed(let service, let error)) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(service == "c")
        #expect(error as? StartFailure == StartFailure(name: "c"))
    }

    @Test("a component failing while running ends the group: every started one, itself too, stops in reverse")
    func failingWhileRunning() throws {
        let journal = Journal()
        var events: [String] = []
        let seen = Mutex<[String]>([])
        let group = ServiceGroup(
            [FakeService("a", journal), FakeService("b", journal, failWhenStarted: true), FakeService("c", journal)],
            shutdownTimeout: .seconds(10)
        ) { event in
            if case .failed(let name, _) = event { seen.withLock { $0.append(name) } }
        }
        let result = try #require(GroupRun(group).wait())
        events = seen.withLock { $0 }
        #expect(events == ["b"])
        // c may or may not have started before b's failure arrived; whatever started is stopped in reverse.
        let all = journal.all
        let expectedStops = (all.contains("start c") ? ["c"] : []) + ["b", "a"]
        #expect(all.filter { $0.hasPrefix("stop ") } == expectedStops.map { "stop \($0)" })
        guard case .failure(.failed(let service, let error)) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(service == "b")
        #expect(error as? RunFailure == RunFailure(name: "b"))
    }

    @Test("the failure's event is sent before anything is stopped, however slow the event's handler")
    func failureEventComesBeforeTheStops() throws {
        let journal = Journal()
        let b = FakeService("b", journal)
        let group = ServiceGroup([FakeService("a", journal), b], shutdownTimeout: .seconds(10)) { event in
            guard case .failed(let name, _) = event else { return }
            Thread.sleep(forTimeInterval: 0.2)
            journal.record("failed \(name)")
        }
        let run = GroupRun(group)
        #expect(eventually { journal.all.count == 2 })
        b.failed?(RunFailure(name: "b"))
        _ = try #require(run.wait())
        #expect(journal.all == ["start a", "start b", "failed b", "stop b", "stopped b", "stop a", "stopped a"])
    }

    @Test("a failure taken in while a start runs, its event still being sent, starts nothing more")
    func failureWhileStarting() throws {
        let journal = Journal()
        let group = ServiceGroup(
            [FakeService("a", journal, failWhileStarting: true), FakeService("b", journal)], shutdownTimeout: .seconds(10)
        ) {
            guard case .failed(let name, _) = $0 else { return }
            journal.record("failing \(name)")
            Thread.sleep(forTimeInterval: 0.2)
        }
        let result = try #require(GroupRun(group).wait())
        #expect(journal.all == ["start a", "failing a", "stop a", "stopped a"])
        guard case .failure(.failed(let service, _)) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(service == "a")
    }

    @Test("a failure taken in while stopping is the group's failure, however slow its event's handler")
    func failureWhileStopping() throws {
        let journal = Journal()
        let group = ServiceGroup([FakeService("a", journal, failWhileStopping: true), FakeService("b", journal)], shutdownTimeout: .seconds(10)) {
            guard case .failed(let name, _) = $0 else { return }
            journal.record("failing \(name)")
            Thread.sleep(forTimeInterval: 0.2)
        }
        let run = GroupRun(group)
        #expect(eventually { journal.all.count == 2 })
        group.triggerGracefulShutdown()
        let result = try #require(run.wait())
        guard case .failure(.failed(let service, let error)) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(service == "a")
        #expect(error as? RunFailure == RunFailure(name: "a"))
    }

    @Test("a failure after another is not the group's failure, and no component is stopped twice")
    func onlyTheFirstFailureCounts() throws {
        let journal = Journal()
        let a = FakeService("a", journal)
        let b = FakeService("b", journal)
        let group = ServiceGroup([a, b], shutdownTimeout: .seconds(10))
        let run = GroupRun(group)
        #expect(eventually { journal.all.count == 2 })
        b.failed?(RunFailure(name: "b"))
        a.failed?(RunFailure(name: "a"))
        group.triggerGracefulShutdown()
        let result = try #require(run.wait())
        guard case .failure(.failed(let service, _)) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(service == "b")
        #expect(journal.all == ["start a", "start b", "stop b", "stopped b", "stop a", "stopped a"])
    }

    @Test("a shutdown asked for before run starts nothing and returns normally")
    func shutdownBeforeRun() throws {
        let journal = Journal()
        let group = ServiceGroup([FakeService("a", journal), FakeService("b", journal)], shutdownTimeout: .seconds(10))
        group.triggerGracefulShutdown()
        let result = try #require(GroupRun(group).wait())
        #expect(throws: Never.self) { try result.get() }
        #expect(journal.all.isEmpty)
    }

    @Test("asking for the shutdown twice stops each component once")
    func doubleShutdown() throws {
        let journal = Journal()
        let group = ServiceGroup([FakeService("a", journal), FakeService("b", journal)], shutdownTimeout: .seconds(10))
        let run = GroupRun(group)
        #expect(eventually { journal.all.count == 2 })
        group.triggerGracefulShutdown()
        group.triggerGracefulShutdown()
        let result = try #require(run.wait())
        #expect(throws: Never.self) { try result.get() }
        group.triggerGracefulShutdown()
        #expect(journal.all == ["start a", "start b", "stop b", "stopped b", "stop a", "stopped a"])
    }

    @Test("a component that does not stop by the deadline: run throws at the deadline naming it, the ones after it are not stopped")
    func stopPastTheDeadline() throws {
        let journal = Journal()
        let hanging = FakeService("b", journal, hangs: true)
        // Long enough that a slow (sanitized, loaded) machine still reaches b's stop before the deadline.
        let timeout = Duration.seconds(2)
        let group = ServiceGroup([FakeService("a", journal), hanging, FakeService("c", journal)], shutdownTimeout: timeout)
        let run = GroupRun(group)
        #expect(eventually { journal.all.count == 3 })
        let asked = ContinuousClock.now
        group.triggerGracefulShutdown()
        let result = try #require(run.wait(seconds: 20))
        let took = ContinuousClock.now - asked
        #expect(took >= timeout && took < .seconds(10), "\(took)")
        guard case .failure(.shutdownTimedOut(let service)) = result else {
            Issue.record("expected a timeout, got \(result)")
            return
        }
        #expect(service == "b")
        #expect(journal.all == ["start a", "start b", "start c", "stop c", "stopped c", "stop b"])
        // Every stop got the one deadline of the whole shutdown.
        let deadline = try #require(hanging.deadline.withLock { $0 })
        #expect(deadline - asked >= timeout && deadline - asked <= took, "\(deadline - asked)")
        hanging.release.signal()
    }
}
