import ConcurrentMap
import Foundation
import Synchronization
import Testing

/// The map the decide stage runs its checks on: results in index order whatever thread ran them, the
/// first error rethrown, and one thread meaning the caller's own (a small batch wakes no other thread).
@Suite struct ConcurrentMapTests {
    struct Failed: Error, Equatable { let index: Int }

    @Test(arguments: [1, 2, 4])
    func resultsComeInIndexOrder(threads: Int) {
        #expect(concurrentMap(100, threads: threads) { $0 * $0 } == (0..<100).map { $0 * $0 })
        #expect(concurrentMap(0, threads: threads) { $0 }.isEmpty)
    }

    @Test func oneThreadIsTheCallersOwn() {
        let caller = pthread_self()
        let others = Atomic<Int>(0)
        _ = concurrentMap(50, threads: 1) { i in
            if pthread_equal(pthread_self(), caller) == 0 { others.add(1, ordering: .relaxed) }
            return i
        }
        #expect(others.load(ordering: .relaxed) == 0)
    }

    @Test(arguments: [1, 2])
    func anErrorIsRethrown(threads: Int) {
        #expect(throws: Failed(index: 7)) {
            try concurrentMap(20, threads: threads) { i throws(Failed) in
                if i == 7 { throw Failed(index: 7) }
                return i
            }
        }
    }

    /// How many ``Counted`` of one test are alive.
    final class Tally: Sendable {
        let alive = Atomic<Int>(0)
    }

    /// Counted in its tally while it lives.
    final class Counted: Sendable {
        let index: Int
        let tally: Tally

        init(_ index: Int, _ tally: Tally) {
            (self.index, self.tally) = (index, tally)
            tally.alive.add(1, ordering: .relaxed)
        }

        deinit { tally.alive.add(-1, ordering: .relaxed) }
    }

    /// Each result made is destroyed exactly once, whether the map returns it or an error drops it.
    @Test(arguments: [2, 4])
    func everyResultIsDestroyedOnceWhetherReturnedOrDropped(threads: Int) {
        let tally = Tally()
        do {
            let values = concurrentMap(200, threads: threads) { Counted($0, tally) }
            #expect(values.map(\.index) == Array(0..<200))
            #expect(tally.alive.load(ordering: .relaxed) == 200)
        }
        #expect(throws: Failed(index: 150)) {
            try concurrentMap(200, threads: threads) { i throws(Failed) in
                if i == 150 { throw Failed(index: 150) }
                return Counted(i, tally)
            }
        }
        #expect(tally.alive.load(ordering: .relaxed) == 0)
    }
}
