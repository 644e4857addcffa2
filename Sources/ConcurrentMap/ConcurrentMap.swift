import Dispatch
import Synchronization

/// `body(0..<count)` on `threads` threads, each taking the next index until none is left (items differ in
/// cost, so a fixed split would leave threads idle), results in index order: the batch's decide across key
/// groups (an attestation costs several assertions) and the benchmarks' minting and in-process verification
/// both run on it. The first error thrown stops every thread at its next index and is rethrown; a body that
/// cannot throw needs no `try`. One thread is the caller's own: no other thread is woken.
public func concurrentMap<T: Sendable, E: Error>(_ count: Int, threads: Int, _ body: @Sendable (Int) throws(E) -> T) throws(E) -> [T] {
    if threads <= 1 {
        var values: [T] = []
        values.reserveCapacity(count)
        for i in 0..<count { values.append(try body(i)) }
        return values
    }
    let results = Mutex<(values: [T?], error: E?)>((Array(repeating: nil, count: count), nil))
    let next = Atomic<Int>(0)
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
        while results.withLock({ $0.error == nil }) {
            let i = next.add(1, ordering: .relaxed).oldValue
            guard i < count else { return }
            do throws(E) {
                let value = try body(i)
                results.withLock { $0.values[i] = value }
            } catch {
                results.withLock { $0.error = $0.error ?? error }
            }
        }
    }
    let (values, error) = results.withLock { ($0.values, $0.error) }
    if let error { throw error }
    return values.map { $0! }
}
