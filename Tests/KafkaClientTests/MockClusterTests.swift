import Foundation
import KafkaClient
import Synchronization
import Testing

/// Producer and consumer against librdkafka's in-process mock cluster: no broker needed. Each test has
/// its own cluster; topics are created by the first produce, with 4 partitions.
@Suite struct MockClusterTests {
    @Test func roundTripKeepsKeyValueHeadersAndTimestamp() async throws {
        let observed = try await onOwnThread { () throws -> (acks: [Result<(partition: Int32, offset: Int64), KafkaError>], received: [KafkaMessage]) in
            let cluster = try KafkaMockCluster(brokers: 3)
            let topic = uniqueName("roundtrip")
            let producer = try KafkaProducer(properties: producerProperties(cluster.bootstrapServers))
            let acks = try produceAll(producer, topic: topic, [
                (key: bytes("device-1"), value: bytes("hello"), headers: [(name: "kind", value: bytes("attestation")), (name: "empty", value: [])]),
                (key: nil, value: bytes("no key"), headers: []),
                (key: [], value: [], headers: [(name: "kind", value: [0, 255])]),
            ])
            producer.close(timeoutMs: 5_000)
            let consumer = try KafkaConsumer(
                properties: consumerProperties(cluster.bootstrapServers, group: uniqueName("g")), topics: [topic], delegate: nil)
            let received = try poll(consumer, for: "3 messages") { $0.count >= 3 }
            consumer.close()
            return withExtendedLifetime(cluster) { (acks, received) }
        }
        let byValue = Dictionary(observed.received.map { (String(decoding: $0.value, as: UTF8.self), $0) }, uniquingKeysWith: { a, _ in a })
        #expect(observed.received.count == 3)

        let first = try #require(byValue["hello"])
        let firstAck = try #require(observed.acks[0].acknowledgement)
        #expect(first.key == bytes("device-1"))
        #expect(first.headers.map(\.name) == ["kind", "empty"])
        #expect(first.headers.map(\.value) == [bytes("attestation"), []])
        #expect(first.partition == firstAck.partition && first.offset == firstAck.offset)
        #expect(first.topicPartition == TopicPartition(topic: first.topic, partition: firstAck.partition))
        #expect(first.timestampMs != nil)

        let unkeyed = try #require(byValue["no key"])
        #expect(unkeyed.key == nil && unkeyed.headers.isEmpty)

        let emptyKey = try #require(byValue[""])
        #expect(emptyKey.key == [])
        #expect(emptyKey.headers.map(\.value) == [[0, 255]])
    }

    @Test func everyCompletionRunsExactlyOnceWithConsecutiveOffsets() async throws {
        let observed = try await onOwnThread { () throws -> (calls: [Int: [Result<(partition: Int32, offset: Int64), KafkaError>]], closedError: KafkaError?) in
            let cluster = try KafkaMockCluster()
            let producer = try KafkaProducer(properties: producerProperties(cluster.bootstrapServers))
            let topic = uniqueName("once")
            let calls = Mutex<[Int: [Result<(partition: Int32, offset: Int64), KafkaError>]]>([:])
            for index in 0..<200 {
                // One key: one partition, so the offsets are 0..<200 in order.
                try producer.produce(topic: topic, key: bytes("same"), value: bytes("\(index)"), headers: []) { result in
                    calls.withLock { $0[index, default: []].append(result) }
                }
            }
            guard producer.flush(timeoutMs: 20_000) else { throw ScenarioError(description: "flush timed out") }
            producer.close(timeoutMs: 5_000)
            var closedError: KafkaError?
            do throws(KafkaError) {
                try producer.produce(topic: topic, key: nil, value: [], headers: []) { _ in }
            } catch {
                closedError = error
            }
            return withExtendedLifetime(cluster) { (calls.withLock { $0 }, closedError) }
        }
        #expect(observed.calls.count == 200)
        #expect(observed.calls.values.allSatisfy { $0.count == 1 })
        let acks = (0..<200).compactMap { observed.calls[$0]?.first?.acknowledgement }
        #expect(acks.map { $0.offset } == Array(0..<200))
        #expect(Set(acks.map { $0.partition }).count == 1)
        #expect(observed.closedError?.code == KafkaError.Code.state)
    }

    @Test func closeFailsUndeliverableMessagesThroughTheirCompletion() async throws {
        let observed = try await onOwnThread { () throws -> (flushed: Bool, calls: [Result<(partition: Int32, offset: Int64), KafkaError>]) in
            // Nothing listens on port 1: the message can only wait in the queue until close purges it.
            let producer = try KafkaProducer(properties: [
                "bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": "60000", "enable.metrics.push": "false",
                "log_level": "0",
            ])
            let calls = Mutex<[Result<(partition: Int32, offset: Int64), KafkaError>]>([])
            try producer.produce(topic: "nowhere", key: nil, value: bytes("lost"), headers: []) { result in
                calls.withLock { $0.append(result) }
            }
            let flushed = producer.flush(timeoutMs: 100)
            producer.close(timeoutMs: 100)
            producer.close(timeoutMs: 100)
            return (flushed, calls.withLock { $0 })
        }
        #expect(!observed.flushed)
        #expect(observed.calls.count == 1)
        if case .failure(let error) = try #require(observed.calls.first) {
            #expect(error.code == KafkaError.Code.purgedQueue)
        } else {
            Issue.record("an undeliverable message was reported as delivered")
        }
    }

    @Test func storedOffsetsAreCommittedAndANewMemberResumesAfterThem() async throws {
        struct Observed: Sendable {
            var offsets: [Int64] = []
            var committedAfterSync: Int64??
            var committedAfterClose: Int64??
            var neverCommitted: Int64??
            var foreignStoreError: Int32?
            var resumedAt: Int64?
            var resumedCount = 0
            var revoked: [RebalanceRecorder.Event] = []
        }
        let observed = try await onOwnThread { () throws -> Observed in
            var observed = Observed()
            let cluster = try KafkaMockCluster()
            let topic = uniqueName("commit")
            let group = uniqueName("g")
            let producer = try KafkaProducer(properties: producerProperties(cluster.bootstrapServers))
            let acks = try produceAll(producer, topic: topic, (0..<10).map { (key: bytes("same"), value: bytes("\($0)"), headers: []) })
            producer.close(timeoutMs: 5_000)
            let partition = TopicPartition(topic: topic, partition: try acks[0].get().partition)
            let other = TopicPartition(topic: topic, partition: (partition.partition + 1) % 4)

            let recorder = RebalanceRecorder()
            let first = try KafkaConsumer(
                properties: consumerProperties(cluster.bootstrapServers, group: group), topics: [topic], delegate: recorder)
            var received: [KafkaMessage] = []
            while received.count < 4 {
                received += try poll(first, for: "4 messages", max: 4 - received.count) { !$0.isEmpty }
            }
            received += try poll(first, for: "6 more messages") { $0.count >= 6 }
            observed.offsets = received.map(\.offset)

            try first.storeOffsets([partition: received[2].offset + 1])
            try first.commitSync()
            observed.committedAfterSync = try first.committed([partition], timeoutMs: 5_000)[partition]
            observed.neverCommitted = try first.committed([other], timeoutMs: 5_000)[other]
            do throws(KafkaError) {
                try first.storeOffsets([TopicPartition(topic: "never-subscribed", partition: 0): 1])
            } catch {
                observed.foreignStoreError = error.code
            }
            // The final revoke during close stores a later offset; the wrapper commits it before leaving.
            let finalOffset = received[4].offset + 1
            recorder.onRevoke.withLock {
                $0 = { [weak first] partitions in
                    if partitions.contains(partition) { try? first?.storeOffsets([partition: finalOffset]) }
                }
            }
            first.close()
            observed.revoked = recorder.events.filter { if case .revoked = $0 { true } else { false } }

            let second = try KafkaConsumer(
                properties: consumerProperties(cluster.bootstrapServers, group: group), topics: [topic], delegate: nil)
            let resumed = try poll(second, for: "the messages after the committed offset") { $0.count >= 5 }
            observed.resumedAt = resumed.first?.offset
            observed.resumedCount = resumed.count
            observed.committedAfterClose = try second.committed([partition], timeoutMs: 5_000)[partition]
            second.close()
            return withExtendedLifetime(cluster) { observed }
        }
        #expect(observed.offsets == Array(0..<10))
        #expect(observed.committedAfterSync == .some(3))
        #expect(observed.neverCommitted == .some(nil))
        #expect(observed.foreignStoreError == KafkaError.Code.unknownPartition)
        #expect(observed.revoked.count == 1)
        #expect(observed.committedAfterClose == .some(5))
        #expect(observed.resumedAt == 5)
        #expect(observed.resumedCount == 5)
    }

    @Test(arguments: ["range", "cooperative-sticky"])
    func twoMembersSharePartitionsAndTheDelegateSeesTheRebalance(strategy: String) async throws {
        struct Observed: Sendable {
            var firstAlone: Set<TopicPartition> = []
            var firstShared: Set<TopicPartition> = []
            var secondShared: Set<TopicPartition> = []
            var firstEvents: [RebalanceRecorder.Event] = []
            var secondEvents: [RebalanceRecorder.Event] = []
        }
        let observed = try await onOwnThread { () throws -> Observed in
            var observed = Observed()
            let cluster = try KafkaMockCluster(brokers: 3)
            let topic = uniqueName("share")
            let group = uniqueName("g")
            let producer = try KafkaProducer(properties: producerProperties(cluster.bootstrapServers))
            _ = try produceAll(producer, topic: topic, [(key: nil, value: bytes("create the topic"), headers: [])])
            producer.close(timeoutMs: 5_000)

            let errors = ErrorLog()
            let firstRecorder = RebalanceRecorder()
            let secondRecorder = RebalanceRecorder()
            var properties = consumerProperties(cluster.bootstrapServers, group: group)
            properties["partition.assignment.strategy"] = strategy
            let first = try KafkaConsumer(
                properties: properties, topics: [topic], delegate: firstRecorder, onError: errors.handler)
            _ = try poll(first, for: "the first member's assignment") { _ in first.assignment().count == 4 }
            observed.firstAlone = Set(first.assignment())

            let second = try KafkaConsumer(
                properties: properties, topics: [topic], delegate: secondRecorder, onError: errors.handler)
            // One thread serves both members: each poll runs that member's rebalance callbacks.
            let deadline = ContinuousClock.now.advanced(by: .seconds(30))
            while !(first.assignment().count == 2 && second.assignment().count == 2) {
                guard ContinuousClock.now < deadline else {
                    throw ScenarioError(description: "no rebalance to 2 + 2 within 30 s; errors: \(errors.all)")
                }
                _ = first.poll(max: 100, timeoutMs: 50)
                _ = second.poll(max: 100, timeoutMs: 50)
            }
            observed.firstShared = Set(first.assignment())
            observed.secondShared = Set(second.assignment())
            second.close()
            // The second member's leaving rebalances the first: let that finish before closing it, since a
            // consumer closed while an assignment is in progress can trip librdkafka's
            // `!rd_kafka_assignment_in_progress` assertion in rd_kafka_cgrp_terminated (seen once in ops/test).
            _ = try poll(first, for: "the first member's whole assignment again") { _ in first.assignment().count == 4 }
            first.close()
            observed.firstEvents = firstRecorder.events
            observed.secondEvents = secondRecorder.events
            return withExtendedLifetime(cluster) { observed }
        }
        let all = Set((0..<4).map { TopicPartition(topic: observed.firstAlone.first?.topic ?? "", partition: $0) })
        #expect(observed.firstAlone == all)
        #expect(observed.firstShared.union(observed.secondShared) == all)
        #expect(observed.firstShared.isDisjoint(with: observed.secondShared))
        if strategy == "range" {
            // Eager protocol: the first member gives everything back, then gets its share.
            #expect(Array(observed.firstEvents.prefix(3)) == [.assigned(all), .revoked(all), .assigned(observed.firstShared)])
        } else {
            // Cooperative protocol: the first member gives up only what moves, and keeps the rest.
            #expect(Array(observed.firstEvents.prefix(2)) == [.assigned(all), .revoked(all.subtracting(observed.firstShared))])
        }
        // The second member's close runs its final revoke through the delegate.
        #expect(observed.secondEvents == [.assigned(observed.secondShared), .revoked(observed.secondShared)])
    }

    @Test func pauseHoldsBackOnePartitionWhilePollingContinuesAndResumeDeliversIt() async throws {
        struct Observed: Sendable {
            var paused: TopicPartition?
            var whilePaused: [KafkaMessage] = []
            var afterResume: [KafkaMessage] = []
            var expectedOnPaused: [Int64] = []
            var expectedElsewhere = 0
        }
        let observed = try await onOwnThread { () throws -> Observed in
            var observed = Observed()
            let cluster = try KafkaMockCluster()
            let topic = uniqueName("pause")
            let producer = try KafkaProducer(properties: producerProperties(cluster.bootstrapServers))
            let warmUp = try produceAll(producer, topic: topic, [(key: bytes("warm-up"), value: [], headers: [])])

            let consumer = try KafkaConsumer(
                properties: consumerProperties(cluster.bootstrapServers, group: uniqueName("g")), topics: [topic], delegate: nil)
            _ = try poll(consumer, for: "the warm-up message") { $0.count == 1 }
            let paused = TopicPartition(topic: topic, partition: try warmUp[0].get().partition)
            observed.paused = paused
            consumer.pause([paused])

            let acks = try produceAll(producer, topic: topic, (0..<40).map { (key: bytes("key-\($0)"), value: bytes("\($0)"), headers: []) })
            producer.close(timeoutMs: 5_000)
            let delivered = try acks.map { try $0.get() }
            observed.expectedOnPaused = delivered.filter { $0.partition == paused.partition }.map { $0.offset }.sorted()
            observed.expectedElsewhere = delivered.count - observed.expectedOnPaused.count
            // Everything from the other partitions, then another second of polling for a stray message.
            observed.whilePaused = try poll(consumer, for: "the unpaused partitions") { $0.count >= observed.expectedElsewhere }
            let settle = ContinuousClock.now.advanced(by: .seconds(1))
            while ContinuousClock.now < settle { observed.whilePaused += consumer.poll(max: 100, timeoutMs: 100) }

            consumer.resume([paused])
            observed.afterResume = try poll(consumer, for: "the resumed partition") { $0.count >= observed.expectedOnPaused.count }
            consumer.close()
            return withExtendedLifetime(cluster) { observed }
        }
        let paused = try #require(observed.paused)
        #expect(observed.expectedOnPaused.count > 0 && observed.expectedElsewhere > 0)
        #expect(observed.whilePaused.count == observed.expectedElsewhere)
        #expect(!observed.whilePaused.contains { $0.topicPartition == paused })
        #expect(observed.afterResume.allSatisfy { $0.topicPartition == paused })
        #expect(observed.afterResume.map(\.offset) == observed.expectedOnPaused)
    }

    @Test func droppingTheLastReferenceInsideACompletionNeitherDeadlocksNorLosesCompletions() async throws {
        final class Holder: Sendable {
            let producer: Mutex<KafkaProducer?>
            let calls = Atomic<Int>(0)
            init(_ producer: KafkaProducer) { self.producer = Mutex(producer) }
        }
        let calls = try await onOwnThread { () throws -> Int in
            let cluster = try KafkaMockCluster()
            let holder = Holder(try KafkaProducer(properties: producerProperties(cluster.bootstrapServers)))
            let released = DispatchSemaphore(value: 0)
            try holder.producer.withLock { producer throws(KafkaError) in
                for index in 0..<3 {
                    try producer!.produce(topic: "last-reference", key: nil, value: bytes("\(index)"), headers: []) { _ in
                        holder.calls.add(1, ordering: .relaxed)
                        // The first completion drops the producer: close runs on the delivery thread itself.
                        let producer = holder.producer.withLock { producer in
                            defer { producer = nil }
                            return producer
                        }
                        if producer != nil {
                            withExtendedLifetime(producer) {}
                            released.signal()
                        }
                    }
                }
            }
            guard released.wait(timeout: .now() + 20) == .success else {
                throw ScenarioError(description: "no completion within 20 s")
            }
            // The delivery thread serves the remaining reports before it ends.
            let deadline = ContinuousClock.now.advanced(by: .seconds(10))
            while holder.calls.load(ordering: .relaxed) < 3 && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.01)
            }
            return withExtendedLifetime(cluster) { holder.calls.load(ordering: .relaxed) }
        }
        #expect(calls == 3)
    }
}
