import Foundation
import Lifecycle
import Synchronization
import Testing

@Suite("Periodic task")
struct PeriodicTaskTests {
    @Test("runs at once and then every interval; stop wakes the wait, joins the thread and is idempotent")
    func runsAndStops() {
        let rounds = Mutex(0)
        let task = PeriodicTask(name: "test-periodic", every: .milliseconds(20)) { rounds.withLock { $0 += 1 } }
        task.start()
        #expect(eventually { rounds.withLock { $0 } >= 3 })
        let long = PeriodicTask(name: "test-periodic", every: .seconds(3600)) { rounds.withLock { $0 += 1 } }
        long.start()
        let asked = ContinuousClock.now
        long.stop()
        #expect(ContinuousClock.now - asked < .seconds(2), "stop waited for the interval")
        task.stop()
        let after = rounds.withLock { $0 }
        Thread.sleep(forTimeInterval: 0.1)
        #expect(rounds.withLock { $0 } == after, "a round ran after stop returned")
        task.stop()
    }

    @Test("stopped before it starts, it never runs")
    func stopBeforeStart() {
        let rounds = Mutex(0)
        let task = PeriodicTask(name: "test-periodic", every: .milliseconds(10)) { rounds.withLock { $0 += 1 } }
        task.stop()
        task.start()
        Thread.sleep(forTimeInterval: 0.1)
        #expect(rounds.withLock { $0 } == 0)
    }
}
