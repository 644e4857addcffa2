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
    // Each result goes straight into its own slot, without a lock: the batch's results are large values
    // (a decision), and an array of optionals behind a mutex copied each one in and out again and took the
    // lock twice an item, the two threads contending for it.
    let slots = Slots<T>(count)
    let next = Atomic<Int>(0)
    let failed = Atomic<Bool>(false)
    let failure = Mutex<E?>(nil)
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
        while !failed.load(ordering: .relaxed) {
            let i = next.add(1, ordering: .relaxed).oldValue
            guard i < count else { return }
            do throws(E) {
                slots.initialize(i, to: try body(i))
            } catch {
                failure.withLock { $0 = $0 ?? error }
                failed.store(true, ordering: .relaxed)
            }
        }
    }
    if let error = failure.withLock({ $0 }) { throw error }
    return slots.moveAll()
}

/// The results of one ``concurrentMap(_:threads:_:)``: each index written once, by the thread that ran it,
/// and read only after `concurrentPerform` has returned, which orders every thread's writes before the
/// read. Owns the values until they are moved out; after an error, destroys the ones that were made.
private final class Slots<T>: @unchecked Sendable {
    private let count: Int
    private let values: UnsafeMutablePointer<T>
    private let made: UnsafeMutablePointer<Bool>
    private var moved = false

    init(_ count: Int) {
        self.count = count
        values = .allocate(capacity: count)
        made = .allocate(capacity: count)
        made.initialize(repeating: false, count: count)
    }

    func initialize(_ index: Int, to value: consuming T) {
        (values + index).initialize(to: value)
        made[index] = true
    }

    /// Every value, moved out in index order. Only when every index was made.
    func moveAll() -> [T] {
        moved = true
        return Array(unsafeUninitializedCapacity: count) { buffer, initialized in
            if let base = buffer.baseAddress { base.moveInitialize(from: values, count: count) }
            initialized = count
        }
    }

    deinit {
        if !moved {
            for index in 0..<count where made[index] { (values + index).deinitialize(count: 1) }
        }
        made.deinitialize(count: count)
        made.deallocate()
        values.deallocate()
    }
}
