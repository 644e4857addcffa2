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
}
