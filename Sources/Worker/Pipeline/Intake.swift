import AttestCore
import Dispatch
import Durations
import Foundation
import KafkaClient
import Lifecycle
import Observability

/// What the intake's actions ask of the consumer: the `KafkaConsumer` in the worker, a probe in tests.
protocol IntakeConsumer: AnyObject, Sendable {
    func pause(_ partitions: [TopicPartition])
    func resume(_ partitions: [TopicPartition])
    func storeOffsets(_ offsets: [TopicPartition: Int64]) throws(KafkaError)
}

extension KafkaConsumer: IntakeConsumer {}

/// The worker's one ``IntakeStateMachine`` behind the condition lock its threads wait on. Each transition
/// runs under the lock and its actions after the lock is released, the wake-ups included: no thread waits
/// for librdkafka while it holds the intake (a consumer call under it would stall every lane and the
/// delivery thread), and a woken thread does not wake only to block on the lock its waker still holds.
final class Intake: @unchecked Sendable {
    /// Guarded by `condition`, whose waiters are woken by `.wakeWaiters`.
    private var machine: IntakeStateMachine
    private let condition = NSCondition()
    /// The poll thread waits on it for room in the buffer (`.wakePoller`).
    private let roomFreed = DispatchSemaphore(value: 0)
    /// Set once, before any thread that acts on the machine starts (the consumer component's start): the
    /// partitions to pause and resume, and the offsets to store, are its.
    var consumer: (any IntakeConsumer)!
    private let logger: Logger
    /// The buffer's message bound, for the logs (read without the lock).
    private let maxMessages: Int

    init(_ machine: IntakeStateMachine, logger: Logger) {
        self.machine = machine
        self.logger = logger
        maxMessages = machine.bounds.maxMessages
    }

    /// Runs a transition under the lock, then carries out its actions outside it.
    func apply(_ transition: (inout IntakeStateMachine) -> [IntakeStateMachine.Action]) {
        perform(locked(transition))
    }

    /// A reading, or a transition that returns no action, under the lock.
    func locked<T>(_ body: (inout IntakeStateMachine) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&machine)
    }

    // MARK: Poll thread

    /// Before each poll: false once stopping, else the partitions assigned while paused are paused first.
    func nextPoll() -> Bool {
        guard case .poll(let actions) = locked({ $0.nextPoll() }) else { return false }
        perform(actions)
        return true
    }

    /// How many messages the next poll may take, once the machine says so (``IntakeStateMachine/pollRoom(now:)``
    /// waits for the lanes while the buffer is full, then pauses).
    func room() -> Int {
        var waited = false
        while true {
            switch locked({ $0.pollRoom(now: .now) }) {
            case .room(let room, let actions):
                if !actions.isEmpty { logger.debug("paused partitions", [("buffered", .int(Int64(maxMessages)))]) }
                perform(actions)
                return room
            case .wait(let deadline):
                if !waited {
                    logger.debug("buffer full; waiting for the lanes", [("limit", .int(Int64(maxMessages)))])
                    waited = true
                }
                _ = roomFreed.wait(timeout: .now() + (deadline - .now).timeInterval)
            }
        }
    }

    /// Drops buffered messages of the revoked partitions (the next owner gets them), waits up to `timeout`
    /// for the ones in batches to finish, then stores the finished prefixes; false when it gave up waiting.
    func revoke(_ partitions: [TopicPartition], timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        condition.lock()
        machine.revoking(partitions)
        var timedOut = false
        while true {
            switch machine.revocation(of: partitions, timedOut: timedOut) {
            case .wait:
                timedOut = !condition.wait(until: deadline)
            case .revoked(let drained, let actions):
                condition.unlock()
                perform(actions)
                return drained
            }
        }
    }

    // MARK: Lanes

    /// Up to a batch of the lane's buffered messages, waiting for them; nil once stopping and drained.
    func nextBatch(lane: Int) -> [KafkaMessage]? {
        condition.lock()
        while true {
            switch machine.takeBatch(lane: lane) {
            case .wait:
                condition.wait()
            case .exit:
                condition.unlock()
                return nil
            case .process(let batch, let actions):
                condition.unlock()
                perform(actions)
                return batch
            }
        }
    }

    /// Waits `duration` unless the worker stops first; false when stopping.
    func sleepUnlessStopping(_ duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        condition.lock()
        defer { condition.unlock() }
        while true {
            switch machine.backoff(until: deadline, now: .now) {
            case .wait(let until): _ = condition.wait(until: until)
            case .retry: return true
            case .giveUp: return false
            }
        }
    }

    /// Waits until polling and the lanes have stopped and every job taken is acknowledged or abandoned.
    func waitUntilDrained() {
        condition.lock()
        defer { condition.unlock() }
        while machine.drainStep() == .wait { condition.wait() }
    }

    // MARK: Actions

    private func perform(_ actions: [IntakeStateMachine.Action]) {
        for action in actions {
            switch action {
            case .pause(let partitions): consumer.pause(partitions)
            case .resume(let partitions): consumer.resume(partitions)
            case .storeOffsets(let offsets): store(offsets)
            case .wakeWaiters: condition.broadcast()
            case .wakePoller: roomFreed.signal()
            }
        }
    }

    private func store(_ offsets: [TopicPartition: Int64]) {
        do {
            try consumer.storeOffsets(offsets)
        } catch {
            // Offsets of partitions no longer assigned cannot be stored; the next owner redelivers.
            logger.debug("offsets not stored", [("error", .string(error.description))])
        }
    }
}
