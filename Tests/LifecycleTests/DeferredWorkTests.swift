import Foundation
import Lifecycle
import Synchronization
import Testing

@Suite("Deferred work")
struct DeferredWorkTests {
    @Test("items run on the thread in the order they fall due, submission order among equals, not before their delay")
    func dueOrder() throws {
        let journal = Journal()
        let work = DeferredWork(name: "test-deferred")
        work.start()
        let submitted = ContinuousClock.now
        let late = Mutex<Duration?>(nil)
        // Delays of seconds: a stalled test thread between two submissions must not reorder what falls due.
        work.submit(after: .seconds(2)) {
            late.withLock { $0 = ContinuousClock.now - submitted }
            journal.record("late")
        }
        work.submit(after: .seconds(1)) { journal.record("soon") }
        work.submit { journal.record("now 1") }
        work.submit { journal.record("now 2") }
        #expect(eventually { journal.all.count == 4 })
        #expect(journal.all == ["now 1", "now 2", "soon", "late"])
        #expect(try #require(late.withLock { $0 }) >= .seconds(2))
        work.stop()
    }

    @Test("stop drops what has not run, joins the thread, and later submissions are dropped; stop twice is harmless")
    func stopDrops() {
        let journal = Journal()
        let work = DeferredWork(name: "test-deferred")
        work.start()
        work.submit(after: .seconds(3600)) { journal.record("never") }
        let asked = ContinuousClock.now
        work.stop()
        #expect(ContinuousClock.now - asked < .seconds(2), "stop waited for a pending item")
        work.submit { journal.record("after stop") }
        work.stop()
        Thread.sleep(forTimeInterval: 0.1)
        #expect(journal.all.isEmpty)
    }

    @Test("stopped before it starts, nothing ever runs")
    func stopBeforeStart() {
        let journal = Journal()
        let work = DeferredWork(name: "test-deferred")
        work.stop()
        work.start()
        work.submit { journal.record("ran") }
        Thread.sleep(forTimeInterval: 0.1)
        #expect(journal.all.isEmpty)
    }
}
