import KafkaClient
import Testing
@testable import Worker

/// The intake's rules without librdkafka (issue 15 item 1): the ledger stores only finished prefixes, the
/// buffer is bounded in messages and bytes with pause after the wait and resume at half, rebalances wait
/// for batches, shutdown drains or abandons.
@Suite struct IntakeStateMachineTests {
    typealias Action = IntakeStateMachine.Action
    let p0 = TopicPartition(topic: "jobs", partition: 0)
    let p1 = TopicPartition(topic: "jobs", partition: 1)
    let t0 = ContinuousClock.now

    /// One lane unless told; pauseAfter 2 s.
    func machine(lanes: Int = 1, maxMessages: Int = 1_000_000, maxBytes: Int = 1 << 40, batchSize: Int = 4) -> IntakeStateMachine {
        var machine = IntakeStateMachine(
            lanes: lanes, bounds: IntakeBounds(maxMessages: maxMessages, maxBytes: maxBytes, maxRecordBytes: 1_000, batchSize: batchSize),
            pauseAfter: .seconds(2))
        machine.assigned([p0, p1])
        return machine
    }

    /// A record whose `retainedBytes` is `bytes` (at least the fixed overhead and the topic).
    func message(_ partition: TopicPartition, _ offset: Int64, bytes: Int = 1_000) -> KafkaMessage {
        let message = KafkaMessage(
            topic: partition.topic, partition: partition.partition, offset: offset, key: nil, value: [], headers: [], timestampMs: nil)
        return KafkaMessage(
            topic: partition.topic, partition: partition.partition, offset: offset, key: nil,
            value: Array(repeating: 0, count: max(0, bytes - message.retainedBytes)), headers: [], timestampMs: nil)
    }

    func messages(_ partition: TopicPartition, _ offsets: Range<Int64>, bytes: Int = 1_000) -> [KafkaMessage] {
        offsets.map { message(partition, $0, bytes: bytes) }
    }

    /// Takes the lane's next batch, which must be there.
    func take(_ machine: inout IntakeStateMachine, lane: Int = 0) -> (batch: [KafkaMessage], then: [Action]) {
        guard case .process(let batch, let actions) = machine.takeBatch(lane: lane) else {
            Issue.record("no batch")
            return ([], [])
        }
        return (batch, actions)
    }

    @discardableResult
    func finish(_ machine: inout IntakeStateMachine, _ message: KafkaMessage) -> [Action] {
        machine.finished(message.topicPartition, offset: message.offset, retainedBytes: message.retainedBytes)
    }

    func stored(_ actions: [Action]) -> [TopicPartition: Int64] {
        actions.reduce(into: [:]) { result, action in
            if case .storeOffsets(let offsets) = action { result.merge(offsets) { $1 } }
        }
    }

    func isWaiting(_ step: IntakeStateMachine.LaneStep) -> Bool {
        if case .wait = step { true } else { false }
    }

    func isExit(_ step: IntakeStateMachine.LaneStep) -> Bool {
        if case .exit = step { true } else { false }
    }

    // MARK: The ledger

    @Test func storesOnlyTheContiguousFinishedPrefix() {
        var m = machine(batchSize: 10)
        let received = messages(p0, 10..<15)
        _ = m.received(received)
        _ = take(&m)
        #expect(stored(finish(&m, received[1])).isEmpty)
        #expect(stored(finish(&m, received[2])).isEmpty, "10 is not finished: nothing is stored")
        #expect(stored(finish(&m, received[0])) == [p0: 13])
        #expect(stored(finish(&m, received[4])).isEmpty)
        #expect(stored(finish(&m, received[3])) == [p0: 15])
        #expect(m.inFlight == 0 && m.count == 0 && m.bytes == 0)
    }

    /// What a decided batch publishes counts in the byte bound until its offsets finish: a batch of large
    /// dead letters fills the bound the records alone would not.
    @Test func theOutboundChargeCountsUntilTheOffsetFinishes() {
        var m = machine(maxBytes: 10_000, batchSize: 2)
        let received = messages(p0, 0..<2)
        _ = m.received(received)
        _ = take(&m)
        #expect(m.bytes == 2_000)
        _ = m.charged(8_000)
        #expect(m.bytes == 10_000)
        if case .room = m.pollRoom(now: .now) { Issue.record("room to poll although the charge fills the bound") }
        _ = m.finished(p0, offset: 0, retainedBytes: received[0].retainedBytes + 4_000)
        _ = m.finished(p0, offset: 1, retainedBytes: received[1].retainedBytes + 4_000)
        #expect(m.bytes == 0 && m.inFlight == 0)
    }

    @Test func inOrderAcknowledgementsStoreEachStepOnce() {
        var m = machine(batchSize: 10)
        let received = messages(p0, 0..<3)
        _ = m.received(received)
        _ = take(&m)
        #expect(received.map { stored(finish(&m, $0)) } == [[p0: 1], [p0: 2], [p0: 3]])
        #expect(m.finalOffsets().isEmpty, "what was stored is not stored again")
    }

    @Test func partitionsAreIndependentAndGapsInOffsetsAreFine() {
        var m = machine(batchSize: 10)
        let a = message(p0, 5), b = message(p0, 9), c = message(p1, 0)  // compacted or transactional gaps
        _ = m.received([a, b, c])
        _ = take(&m)
        #expect(stored(finish(&m, c)) == [p1: 1])
        #expect(stored(finish(&m, b)).isEmpty)
        #expect(stored(finish(&m, a)) == [p0: 10])
        #expect(m.inFlight == 0)
    }

    @Test func aFinishOfAnOffsetNotPendingChangesNoOffset() {
        var m = machine(batchSize: 10)
        let received = messages(p0, 0..<3)
        _ = m.received(received)
        _ = take(&m)
        #expect(stored(finish(&m, received[0])) == [p0: 1])
        #expect(stored(finish(&m, message(p0, 3))).isEmpty, "never received")
        #expect(stored(finish(&m, received[0])).isEmpty, "finished already")
        _ = m.received([message(p0, 3)])
        _ = take(&m)
        #expect(stored(finish(&m, received[1])) == [p0: 2])
        #expect(stored(finish(&m, received[2])) == [p0: 3], "3 was received after its stray finish: it is not finished")
    }

    @Test func manyMessagesStayCheap() {
        var m = machine(batchSize: 100_000)
        let received = messages(p0, 0..<100_000, bytes: 0)
        _ = m.received(received)
        _ = take(&m)
        var last: [TopicPartition: Int64] = [:]
        for message in received.reversed() { last.merge(stored(finish(&m, message))) { $1 } }
        #expect(last == [p0: 100_000])
        #expect(m.inFlight == 0 && m.count == 0)
    }

    @Test func theLargestOffsetFinishesWithoutTrapping() {
        var m = machine()
        let received = [message(p0, .max - 1), message(p0, .max)]
        _ = m.received(received)
        _ = take(&m)
        #expect(stored(finish(&m, received[1])).isEmpty)
        #expect(stored(finish(&m, received[0])) == [p0: .max], "saturated, not wrapped")
    }

    @Test func hugeOffsetsWithGapsStoreTheirSuccessors() {
        var m = machine()
        let received = [message(p1, 0), message(p1, .max / 2), message(p1, .max - 2)]
        _ = m.received(received)
        _ = take(&m)
        #expect(stored(finish(&m, received[0])) == [p1: 1])
        #expect(stored(finish(&m, received[1])) == [p1: .max / 2 + 1])
        #expect(stored(finish(&m, received[2])) == [p1: .max - 1])
    }

    // MARK: Lanes and empty polls

    @Test func aPartitionsMessagesGoToOneLaneInOrderInBatches() {
        var m = machine(lanes: 2, batchSize: 2)
        let p3 = TopicPartition(topic: "jobs", partition: 3)
        m.assigned([p3])
        #expect(m.received(messages(p0, 0..<3) + messages(p1, 0..<1) + messages(p3, 0..<2)) == [.wakeWaiters])
        #expect(take(&m, lane: 0).batch.map(\.offset) == [0, 1])
        #expect(take(&m, lane: 0).batch.map(\.offset) == [2])
        #expect(isWaiting(m.takeBatch(lane: 0)))
        let odd = take(&m, lane: 1).batch
        #expect(odd.map(\.topicPartition) == [p1, p3] && odd.map(\.offset) == [0, 0])
        #expect(take(&m, lane: 1).batch.map(\.offset) == [1])
        #expect(m.count == 6, "taken jobs count until they finish")
    }

    @Test func anEmptyPollChangesNothing() {
        var m = machine()
        #expect(m.received([]).isEmpty)
        #expect(isWaiting(m.takeBatch(lane: 0)))
        #expect(m.count == 0 && m.bytes == 0 && m.inFlight == 0)
        #expect(m.pollRoom(now: t0) == .room(1_000_000, then: []))
    }

    /// A worker given every other partition (round-robin or sticky assignment) still uses all its lanes:
    /// a lane by partition number alone would serve them all on lane 0.
    @Test func partitionsOfOneResidueSpreadOverTheLanes() {
        var m = IntakeStateMachine(
            lanes: 2, bounds: IntakeBounds(maxMessages: 1_000, maxBytes: 1 << 40, maxRecordBytes: 1_000, batchSize: 8),
            pauseAfter: .seconds(2))
        let even = [0, 2, 4, 6].map { TopicPartition(topic: "jobs", partition: $0) }
        m.assigned(even)
        #expect(even.map { m.lane(of: $0) } == [0, 1, 0, 1])
        _ = m.received(even.flatMap { messages($0, 0..<1) })
        #expect(take(&m, lane: 0).batch.map(\.topicPartition) == [even[0], even[2]])
        #expect(take(&m, lane: 1).batch.map(\.topicPartition) == [even[1], even[3]])
        // p2 revoked while its batch runs: a partition assigned now goes to the lane with fewer assigned
        // partitions whatever its number, and p2 assigned again stays behind its batch on lane 1.
        m.revoking([even[1]])
        _ = m.revoked([even[1]])
        let other = TopicPartition(topic: "assertions", partition: 0)
        m.assigned([other])
        #expect(m.lane(of: other) == 1)
        m.assigned([even[1]])
        #expect(m.lane(of: even[1]) == 1)
        #expect(m.lane(of: TopicPartition(topic: "jobs", partition: 8)) == nil, "not assigned")
    }

    // MARK: Backpressure

    @Test func aFullBufferWaitsForTheLanesThenPausesAndResumesAtHalfInMessages() {
        var m = machine(maxMessages: 10)
        _ = m.received(messages(p0, 0..<10))
        #expect(m.pollRoom(now: t0) == .wait(until: t0 + .seconds(2)))
        #expect(m.pollRoom(now: t0 + .seconds(1)) == .wait(until: t0 + .seconds(2)), "the deadline does not move")
        #expect(!m.isPaused)
        #expect(m.pollRoom(now: t0 + .seconds(2)) == .room(0, then: [.pause([p0, p1])]))
        #expect(m.isPaused)
        #expect(m.pollRoom(now: t0 + .seconds(3)) == .room(0, then: []), "paused: polls serve events only")
        let first = take(&m), second = take(&m)
        #expect(first.then.isEmpty && second.then.isEmpty, "taking moves jobs, it frees nothing")
        for message in first.batch { #expect(!finish(&m, message).contains(.resume([p0, p1]))) }
        #expect(m.count == 6)
        #expect(finish(&m, second.batch[0]).contains(.resume([p0, p1])), "at half")
        #expect(!m.isPaused)
        #expect(!finish(&m, second.batch[1]).contains { if case .resume = $0 { true } else { false } }, "once")
        #expect(m.pollRoom(now: t0 + .seconds(4)) == .room(6, then: []))
    }

    @Test func theByteBoundPausesAndResumesAtHalfToo() {
        var m = machine(maxMessages: 100, maxBytes: 10_000)
        #expect(m.pollRoom(now: t0) == .room(10, then: []), "ten records of the largest size fill the bytes")
        _ = m.received(messages(p1, 0..<10))
        #expect(m.bytes == 10_000)
        #expect(m.pollRoom(now: t0) == .wait(until: t0 + .seconds(2)))
        #expect(m.pollRoom(now: t0 + .seconds(5)) == .room(0, then: [.pause([p0, p1])]))
        let batch = take(&m).batch + take(&m).batch
        for message in batch.prefix(4) { #expect(!finish(&m, message).contains(.resume([p0, p1]))) }
        #expect(m.bytes == 6_000)
        #expect(finish(&m, batch[4]).contains(.resume([p0, p1])), "at 5,000 bytes of 10,000")
    }

    @Test func theWaitingPollerIsWokenOnceThereIsRoomForABatch() {
        var m = machine(maxMessages: 10)
        let received = messages(p0, 0..<10)
        _ = m.received(received)
        _ = take(&m)
        #expect(m.pollRoom(now: t0) == .wait(until: t0 + .seconds(2)))
        for message in received.prefix(3) { #expect(!finish(&m, message).contains(.wakePoller)) }
        #expect(finish(&m, received[3]).contains(.wakePoller), "six left: room for a batch of four")
        #expect(m.pollRoom(now: t0 + .seconds(1)) == .room(4, then: []), "freed before the deadline: no pause")
        _ = m.received(messages(p0, 10..<14))
        _ = take(&m)
        #expect(!finish(&m, received[4]).contains(.wakePoller), "the poller is not waiting")
        #expect(m.pollRoom(now: t0 + .seconds(5)) == .room(1, then: []))
        _ = m.received(messages(p0, 14..<15))
        #expect(m.pollRoom(now: t0 + .seconds(6)) == .wait(until: t0 + .seconds(8)), "a new wait, a new deadline")
    }

    @Test func theWakeUpNeedsAQuarterOfTheBytesFree() {
        var m = machine(maxMessages: 100, maxBytes: 10_000, batchSize: 10)
        let received = messages(p0, 0..<10)
        _ = m.received(received)
        _ = take(&m)
        #expect(m.pollRoom(now: t0) == .wait(until: t0 + .seconds(2)))
        #expect(!finish(&m, received[0]).contains(.wakePoller) && !finish(&m, received[1]).contains(.wakePoller))
        #expect(finish(&m, received[2]).contains(.wakePoller), "7,000 bytes of 10,000")
    }

    @Test func partitionsAssignedWhilePausedArePausedBeforeTheNextPoll() {
        var m = machine(maxMessages: 2)
        _ = m.received(messages(p0, 0..<2))
        _ = m.pollRoom(now: t0)
        #expect(m.pollRoom(now: t0 + .seconds(2)) == .room(0, then: [.pause([p0, p1])]))
        let p2 = TopicPartition(topic: "jobs", partition: 2)
        m.assigned([p2])
        #expect(m.nextPoll() == .poll(then: [.pause([p0, p1, p2])]))
        #expect(m.nextPoll() == .poll(then: []), "once")
    }

    @Test func nothingIsPausedWhileNotPaused() {
        var m = machine()
        m.assigned([TopicPartition(topic: "jobs", partition: 2)])
        #expect(m.nextPoll() == .poll(then: []))
    }

    @Test func aTakeResumesWhenARevocationEmptiedTheBuffer() {
        var m = machine(maxMessages: 10)
        _ = m.received(messages(p0, 0..<2) + messages(p1, 0..<8))
        _ = m.pollRoom(now: t0)
        _ = m.pollRoom(now: t0 + .seconds(2))
        m.revoking([p1])
        _ = m.revoked([p1])
        #expect(m.count == 2 && m.isPaused)
        #expect(take(&m).then == [.resume([p0])], "only the partitions still assigned")
    }

    // MARK: Rebalance

    @Test func aRevocationMidBatchDropsTheBufferedWaitsForTheBatchThenStores() {
        var m = machine(batchSize: 2)
        let p0s = messages(p0, 0..<4), p1s = messages(p1, 0..<2)
        _ = m.received(p0s + p1s)
        let batch = take(&m).batch
        #expect(batch.map(\.offset) == [0, 1])
        m.revoking([p0])
        #expect(m.count == 4, "p0's two buffered messages are dropped, its batch is not")
        #expect(m.received([message(p0, 4)]) == [.wakeWaiters] && m.count == 4, "nor polled anew")
        #expect(m.hasInBatch([p0]) && !m.hasInBatch([p1]))
        #expect(stored(finish(&m, batch[0])) == [p0: 1])
        #expect(m.hasInBatch([p0]))
        #expect(stored(finish(&m, batch[1])) == [p0: 2])
        #expect(!m.hasInBatch([p0]))
        #expect(m.revoked([p0]).isEmpty, "already stored")
        #expect(take(&m).batch.map(\.topicPartition) == [p1, p1], "p1 goes on")
        #expect(m.inFlight == 2)
    }

    @Test func aRevocationStoresWhatFinishedEvenIfItGivesUpOnTheRest() {
        var m = machine(batchSize: 3)
        let batch = messages(p0, 0..<3)
        _ = m.received(batch)
        _ = take(&m)
        m.revoking([p0])
        #expect(stored(finish(&m, batch[1])).isEmpty)
        // The revocation timed out with offsets 0 and 2 unfinished: nothing of p0 can be stored.
        #expect(m.revoked([p0]) == [])
        #expect(m.inFlight == 0, "p0's offsets are forgotten")
        #expect(m.count == 2 && m.hasInBatch([p0]), "its batch still counts until it ends")
        #expect(stored(finish(&m, batch[0])).isEmpty && stored(finish(&m, batch[2])).isEmpty, "nothing stored for a revoked partition")
        #expect(m.count == 0 && m.bytes == 0)
    }

    /// p0's offsets 0 and 1 taken into a batch, then p0 revoked without waiting for them.
    func revokedWithABatchInFlight(_ machine: inout IntakeStateMachine) -> [KafkaMessage] {
        let batch = messages(p0, 0..<2)
        _ = machine.received(batch)
        _ = take(&machine)
        machine.revoking([p0])
        _ = machine.revoked([p0])
        return batch
    }

    @Test func aReassignedPartitionStartsAFreshLedger() {
        var m = machine(batchSize: 2)
        let old = revokedWithABatchInFlight(&m)
        m.assigned([p0])
        let redelivered = messages(p0, 5..<7)
        #expect(m.received(redelivered) == [.wakeWaiters])
        _ = take(&m)
        #expect(stored(finish(&m, old[1])).isEmpty, "a batch from before the revocation moves no offset")
        #expect(stored(finish(&m, redelivered[0])) == [p0: 6])
        #expect(stored(finish(&m, old[0])).isEmpty)
        #expect(stored(finish(&m, redelivered[1])) == [p0: 7])
        #expect(m.count == 0 && m.inFlight == 0)
    }

    @Test func aFinishFromBeforeARevocationDoesNotFinishTheRedeliveredCopy() {
        var m = machine(batchSize: 2)
        let old = revokedWithABatchInFlight(&m)
        #expect(stored(finish(&m, old[1])).isEmpty, "arrives after the revocation gave up waiting")
        m.assigned([p0])
        let redelivered = messages(p0, 0..<2)
        _ = m.received(redelivered)
        _ = take(&m)
        #expect(stored(finish(&m, redelivered[0])) == [p0: 1], "the copy of 1 is not finished yet")
    }

    // MARK: Shutdown

    @Test func stopWakesEveryoneAndLanesDrainTheBufferBeforeExiting() {
        var m = machine(batchSize: 2)
        _ = m.received(messages(p0, 0..<3))
        #expect(m.stop() == [.wakeWaiters, .wakePoller])
        #expect(m.nextPoll() == .stop)
        let first = take(&m).batch, second = take(&m).batch
        #expect(first.count == 2 && second.count == 1, "buffered jobs are still decided")
        #expect(isWaiting(m.takeBatch(lane: 0)), "the poll thread may still add its last poll")
        #expect(m.pollStopped() == [.wakeWaiters])
        #expect(isExit(m.takeBatch(lane: 0)))
        #expect(m.laneStopped() == [.wakeWaiters])
        #expect(m.drainStep() == .wait, "three jobs unacknowledged")
        for message in first + second { finish(&m, message) }
        #expect(m.drainStep() == .drained)
    }

    @Test func aBackoffWaitsUntilItsDeadlineAndTheStopCutsItShort() {
        var m = machine()
        let deadline = t0 + .milliseconds(50)
        #expect(m.backoff(until: deadline, now: t0) == .wait(until: deadline))
        #expect(m.backoff(until: deadline, now: deadline) == .retry)
        _ = m.stop()
        #expect(m.backoff(until: deadline, now: t0) == .giveUp, "a stop wakes the lane, which gives its batch up")
    }

    @Test func aFullBufferDoesNotHoldTheShutdown() {
        var m = machine(maxMessages: 2)
        _ = m.received(messages(p0, 0..<2))
        #expect(m.pollRoom(now: t0) == .wait(until: t0 + .seconds(2)))
        _ = m.stop()
        #expect(m.pollRoom(now: t0) == .room(0, then: []))
    }

    @Test func anAbandonedBatchLeavesItsOffsetsUnfinished() {
        var m = machine(lanes: 2, batchSize: 3)
        let kept = messages(p0, 0..<2), given = messages(p1, 0..<3)
        _ = m.received(kept + given)
        _ = take(&m, lane: 0)
        _ = take(&m, lane: 1)
        _ = m.stop()
        finish(&m, kept[0])
        #expect(m.abandoned(given) == [.wakeWaiters])
        #expect(!m.hasInBatch([p1]) && m.count == 1 && m.bytes == 1_000)
        finish(&m, kept[1])
        _ = m.pollStopped()
        _ = m.laneStopped()
        #expect(m.drainStep() == .wait, "a lane still runs")
        _ = m.laneStopped()
        #expect(m.drainStep() == .drained)
        #expect(m.finalOffsets().isEmpty, "p0 was stored as it finished, p1 never")
        #expect(m.inFlight == 3, "p1's offsets stay unfinished for the next owner")
    }

    // MARK: Flow and phase

    @Test func theFlowGoesThroughEachOfItsTransitions() {
        var m = machine(maxMessages: 8)
        #expect(m.flow == .flowing)
        let received = messages(p0, 0..<8)
        _ = m.received(received)
        #expect(m.pollRoom(now: t0) == .wait(until: t0 + .seconds(2)))
        #expect(m.flow == .full(since: t0, wakeWanted: true), "flowing → full")
        let batch = take(&m).batch
        for message in batch { finish(&m, message) }
        #expect(m.flow == .full(since: t0, wakeWanted: false), "woken once there is room for a batch")
        #expect(m.pollRoom(now: t0 + .seconds(1)) == .room(4, then: []))
        #expect(m.flow == .flowing, "full → flowing")
        _ = m.received(messages(p0, 8..<12))
        _ = m.pollRoom(now: t0 + .seconds(2))
        #expect(m.pollRoom(now: t0 + .seconds(4)) == .room(0, then: [.pause([p0, p1])]))
        #expect(m.flow == .paused(pauseAssigned: false), "full → paused")
        let p2 = TopicPartition(topic: "jobs", partition: 2)
        m.assigned([p2])
        #expect(m.flow == .paused(pauseAssigned: true))
        #expect(m.nextPoll() == .poll(then: [.pause([p0, p1, p2])]))
        #expect(m.flow == .paused(pauseAssigned: false))
        let rest = take(&m).batch + take(&m).batch
        for message in rest.prefix(4) { finish(&m, message) }
        #expect(m.flow == .flowing, "paused → flowing at half")
    }

    @Test func theShutdownGoesThroughEachPhaseOnce() {
        var m = machine(lanes: 2)
        #expect(m.phase == .running)
        _ = m.stop()
        #expect(m.phase == .stopping && m.drainStep() == .wait)
        _ = m.pollStopped()
        #expect(m.phase == .draining(lanesRunning: 2) && m.drainStep() == .wait)
        _ = m.laneStopped()
        #expect(m.phase == .draining(lanesRunning: 1) && m.drainStep() == .wait)
        _ = m.laneStopped()
        #expect(m.phase == .draining(lanesRunning: 0) && m.drainStep() == .drained)
    }

    /// A transition the threads never make (the poll thread ending twice, a lane ending before the
    /// shutdown, a poll after the poll thread ended) traps rather than corrupting the counts.
    @Test func illegalPhaseTransitionsTrap() async {
        await #expect(processExitsWith: .failure) {
            var m = IntakeStateMachineTests().machine()
            _ = m.pollStopped()
        }
        await #expect(processExitsWith: .failure) {
            var m = IntakeStateMachineTests().machine()
            _ = m.stop()
            _ = m.stop()
        }
        await #expect(processExitsWith: .failure) {
            var m = IntakeStateMachineTests().machine()
            _ = m.stop()
            _ = m.laneStopped()
        }
        await #expect(processExitsWith: .failure) {
            var m = IntakeStateMachineTests().machine()
            _ = m.stop()
            _ = m.pollStopped()
            _ = m.laneStopped()
            _ = m.laneStopped()
        }
        await #expect(processExitsWith: .failure) {
            let tests = IntakeStateMachineTests()
            var m = tests.machine()
            _ = m.stop()
            _ = m.pollStopped()
            _ = m.received([tests.message(tests.p0, 0)])
        }
    }

    @Test func aRevocationWaitsForItsBatchUntilItTimesOut() {
        var m = machine(batchSize: 2)
        let batch = messages(p0, 0..<2)
        _ = m.received(batch)
        _ = take(&m)
        m.revoking([p0])
        #expect(m.revocation(of: [p0], timedOut: false) == .wait)
        #expect(stored(finish(&m, batch[1])).isEmpty)
        #expect(m.revocation(of: [p0], timedOut: false) == .wait, "0 is still in its batch")
        #expect(m.revocation(of: [p0], timedOut: true) == .revoked(drained: false, then: []), "given up; nothing finished to store")
        #expect(m.inFlight == 0 && m.hasInBatch([p0]))
    }

    /// The lanes wait for messages: an acknowledgement wakes the waiters only while a revocation or the
    /// shutdown's drain waits for jobs to finish.
    @Test func anAcknowledgementWakesTheWaitersOnlyWhileSomeoneWaitsForIt() {
        var m = machine(batchSize: 4)
        let p0s = messages(p0, 0..<4)
        _ = m.received(p0s)
        _ = take(&m)
        #expect(!finish(&m, p0s[0]).contains(.wakeWaiters), "running, nothing revoking: no one waits for it")
        m.revoking([p0])
        #expect(finish(&m, p0s[1]).contains(.wakeWaiters), "a revocation waits for its partitions' batch")
        _ = m.revocation(of: [p0], timedOut: true)
        let p1s = messages(p1, 0..<2)
        _ = m.received(p1s)
        _ = take(&m)
        #expect(!finish(&m, p1s[0]).contains(.wakeWaiters), "the revocation is over")
        _ = m.stop()
        #expect(finish(&m, p1s[1]).contains(.wakeWaiters), "stopping: the drain waits for every job taken")
    }

    @Test func aRevocationEndsOnceItsBatchIsAcknowledged() {
        var m = machine(batchSize: 2)
        let batch = messages(p0, 0..<2)
        _ = m.received(batch)
        _ = take(&m)
        m.revoking([p0])
        #expect(stored(finish(&m, batch[1])).isEmpty && stored(finish(&m, batch[0])) == [p0: 2])
        #expect(m.revocation(of: [p0], timedOut: false) == .revoked(drained: true, then: []), "stored as they finished")
        #expect(m.inFlight == 0 && !m.hasInBatch([p0]))
    }
}
