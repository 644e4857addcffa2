import Dispatch
import Foundation
import KafkaClient
import Observability
import Synchronization
import Testing
@testable import Worker

/// The intake's lock (issue 26 item 2): a transition's actions run after the lock is released.
@Suite struct IntakeTests {
    let p0 = TopicPartition(topic: "jobs", partition: 0)

    /// A consumer that, on each call, checks that another thread can take the intake's lock meanwhile.
    final class LockProbe: IntakeConsumer, @unchecked Sendable {
        weak var intake: Intake?
        let calls = Mutex<[(call: String, lockFree: Bool)]>([])

        func pause(_ partitions: [TopicPartition]) { record("pause") }
        func resume(_ partitions: [TopicPartition]) { record("resume") }
        func storeOffsets(_ offsets: [TopicPartition: Int64]) throws(KafkaError) { record("storeOffsets \(offsets.values.sorted())") }

        private func record(_ call: String) {
            let taken = DispatchSemaphore(value: 0)
            let intake = self.intake!
            Thread.detachNewThread {
                _ = intake.locked { $0.count }
                taken.signal()
            }
            let lockFree = taken.wait(timeout: .now() + 5) == .success
            calls.withLock { $0.append((call, lockFree)) }
        }
    }

    @Test func actionsRunOutsideTheLock() throws {
        let probe = LockProbe()
        let intake = Intake(
            IntakeStateMachine(
                lanes: 1, bounds: IntakeBounds(maxMessages: 2, maxBytes: 1 << 40, maxRecordBytes: 1_000, batchSize: 2),
                pauseAfter: .zero),
            logger: Logger(level: .error) { _ in })
        probe.intake = intake
        intake.consumer = probe
        intake.locked { $0.assigned([p0]) }
        let received = (0..<2).map {
            KafkaMessage(topic: p0.topic, partition: p0.partition, offset: $0, key: nil, value: [], headers: [], timestampMs: nil)
        }
        intake.apply { $0.received(received) }
        #expect(intake.room() == 0, "full, and paused at once")
        let batch = try #require(intake.nextBatch(lane: 0))
        for message in batch {
            intake.apply { $0.finished(message.topicPartition, offset: message.offset, retainedBytes: message.retainedBytes) }
        }
        let calls = probe.calls.withLock { $0 }
        #expect(calls.map(\.call) == ["pause", "resume", "storeOffsets [1]", "storeOffsets [2]"])
        let underTheLock = calls.filter { !$0.lockFree }.map(\.call)
        #expect(underTheLock.isEmpty, "made while the intake's lock was held")
    }
}
