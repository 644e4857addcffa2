import Synchronization

/// A `Double` updated lock-free: its bit pattern in an `Atomic<UInt64>`, additions by compare-and-exchange.
final class AtomicDouble: Sendable {
    private let bits: Atomic<UInt64>

    init(_ value: Double = 0) { bits = Atomic(value.bitPattern) }

    var value: Double { Double(bitPattern: bits.load(ordering: .relaxed)) }

    func store(_ value: Double) { bits.store(value.bitPattern, ordering: .relaxed) }

    func add(_ amount: Double) {
        var current = bits.load(ordering: .relaxed)
        while true {
            let next = (Double(bitPattern: current) + amount).bitPattern
            let (exchanged, original) = bits.compareExchange(
                expected: current,
                desired: next,
                ordering: .relaxed
            )
            if exchanged { return }
            current = original
        }
    }
}

/// A count updated lock-free.
final class AtomicCount: Sendable {
    private let count = Atomic<UInt64>(0)

    init() {}

    var value: UInt64 { count.load(ordering: .relaxed) }

    func increment() { count.wrappingAdd(1, ordering: .relaxed) }

    func add(_ n: UInt64) { count.wrappingAdd(n, ordering: .relaxed) }
}
