import Dispatch
import Synchronization

/// `body(0..<count)` on `threads` threads, results in index order: minting (one attestation is a few
/// ECDSA signatures and a certificate) is what makes the benchmarks' set-up slow. The first error thrown
/// stops every thread at its next index and is rethrown.
func concurrentMap<T: Sendable>(_ count: Int, threads: Int, _ body: @Sendable (Int) throws -> T) throws -> [T] {
    let results = Mutex<(values: [T?], error: (any Error)?)>((Array(repeating: nil, count: count), nil))
    let next = Atomic<Int>(0)
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
        while results.withLock({ $0.error == nil }) {
            let i = next.add(1, ordering: .relaxed).oldValue
            guard i < count else { return }
            do {
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
