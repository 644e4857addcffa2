import KafkaClient
import Testing
import Worker

@Suite struct OffsetTrackerTests {
    let p0 = TopicPartition(topic: "jobs", partition: 0)
    let p1 = TopicPartition(topic: "jobs", partition: 1)

    @Test func storesOnlyTheContiguousFinishedPrefix() {
        var t = OffsetTracker()
        for o: Int64 in 10..<15 { t.received(p0, offset: o) }
        t.finished(p0, offset: 11)
        t.finished(p0, offset: 12)
        #expect(t.takeCommittable().isEmpty)
        t.finished(p0, offset: 10)
        #expect(t.takeCommittable() == [p0: 13])
        #expect(t.takeCommittable().isEmpty)
        t.finished(p0, offset: 14)
        #expect(t.takeCommittable().isEmpty)
        t.finished(p0, offset: 13)
        #expect(t.takeCommittable() == [p0: 15])
        #expect(t.inFlight(p0) == 0)
    }

    @Test func partitionsAreIndependentAndGapsInOffsetsAreFine() {
        var t = OffsetTracker()
        t.received(p0, offset: 5)
        t.received(p0, offset: 9)  // compacted or transactional gaps
        t.received(p1, offset: 0)
        t.finished(p1, offset: 0)
        t.finished(p0, offset: 9)
        #expect(t.takeCommittable() == [p1: 1])
        t.finished(p0, offset: 5)
        #expect(t.takeCommittable() == [p0: 10])
        #expect(t.totalInFlight == 0)
    }

    @Test func aRevokedPartitionIsForgotten() {
        var t = OffsetTracker()
        for o: Int64 in 0..<4 { t.received(p0, offset: o) }
        t.finished(p0, offset: 0)
        t.finished(p0, offset: 2)
        #expect(t.takeCommittable() == [p0: 1])
        t.remove(p0)
        #expect(t.totalInFlight == 0)
        #expect(t.takeCommittable().isEmpty)
    }

    @Test func manyMessagesStayCheap() {
        var t = OffsetTracker()
        for o in 0..<100_000 { t.received(p0, offset: Int64(o)) }
        for o in stride(from: 99_999, through: 0, by: -1) { t.finished(p0, offset: Int64(o)) }
        #expect(t.takeCommittable() == [p0: 100_000])
    }
}
