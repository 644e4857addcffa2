import Foundation
import Lifecycle
import Testing

@Suite("Waiting on a condition until a continuous-clock deadline")
struct ConditionDeadlineTests {
    @Test("a wait that times out returns false only once the deadline has passed on the continuous clock")
    func neverEarly() {
        let condition = NSCondition()
        condition.lock()
        defer { condition.unlock() }
        for step in 0..<200 {
            let deadline = ContinuousClock.now + .milliseconds(1 + step % 5)
            while condition.wait(until: deadline) {}
            #expect(ContinuousClock.now >= deadline)
        }
    }

    @Test("a deadline already past returns false at once")
    func pastDeadline() {
        let condition = NSCondition()
        condition.lock()
        defer { condition.unlock() }
        let started = ContinuousClock.now
        #expect(!condition.wait(until: started - .seconds(5)))
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test("a signal before the deadline ends the wait with true, long before the deadline")
    func signalled() {
        let condition = NSCondition()
        nonisolated(unsafe) var ready = false
        let signaller = Thread {
            Thread.sleep(forTimeInterval: 0.1)
            condition.lock()
            ready = true
            condition.signal()
            condition.unlock()
        }
        let started = ContinuousClock.now
        condition.lock()
        signaller.start()
        var woken = false
        while !ready, condition.wait(until: started + .seconds(30)) { woken = true }
        condition.unlock()
        #expect(ready && woken)
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}
