import Synchronization

/// The series of one metric family, keyed by label values, with a bound on how many may exist.
///
/// Past ``maxSeries`` distinct label sets, further new ones all land in a single series whose every label
/// value is ``overflowValue``: totals stay right, memory and scrape size stay bounded, and the overflow
/// series shows up on dashboards. Label values must come from bounded sets (kinds, codes, reasons), never
/// from keyIds, appIds or other request data.
///
/// Lock-free: an open-addressing table of write-once slots (`AtomicLazyReference`), sized for every series
/// the bound allows, never resized, never emptied. Lookups of existing series only load; a new series
/// reserves a place in an atomic count and claims the first empty slot of its probe sequence. (A `Mutex`
/// here made eight threads on two cores take seconds for what one thread does in milliseconds: on Linux a
/// contended `Mutex` hands over through the kernel every time.)
final class MetricSeriesTable<Series: AnyObject & Sendable>: Sendable {
    static var overflowValue: String { "_overflow" }

    private final class Entry: Sendable {
        let values: [String]
        let series: Series

        init(_ values: [String], _ series: Series) {
            self.values = values
            self.series = series
        }
    }

    private final class Slot: Sendable {
        let entry = AtomicLazyReference<Entry>()
    }

    let labelNames: [String]
    let maxSeries: Int
    private let make: @Sendable () -> Series
    /// The one series of a family without labels, reached without any lookup.
    private let single: Series?
    /// A power of two above `maxSeries` + 1 (the overflow series), at least twice it: probes stay short.
    private let slots: [Slot]
    /// Series created, the overflow series not counted; may briefly overshoot during a race (given back).
    private let created = Atomic<Int>(0)

    init(
        name: String,
        labelNames: [String],
        maxSeries: Int,
        reserved: Set<String> = [],
        make: @escaping @Sendable () -> Series
    ) {
        for label in labelNames {
            precondition(PrometheusText.isValidLabelName(label), "metric \(name): invalid label name \"\(label)\"")
            precondition(!reserved.contains(label), "metric \(name): label name \"\(label)\" is reserved")
        }
        precondition(Set(labelNames).count == labelNames.count, "metric \(name): duplicate label names")
        precondition(maxSeries >= 1, "metric \(name): maxSeries must be at least 1")
        self.labelNames = labelNames
        self.maxSeries = maxSeries
        self.make = make
        // A family without labels has exactly one series, shown (at zero) from the start.
        if labelNames.isEmpty {
            single = make()
            slots = []
        } else {
            single = nil
            var capacity = 4
            while capacity < 2 * (maxSeries + 1) { capacity *= 2 }
            slots = (0..<capacity).map { _ in Slot() }
        }
    }

    /// The series for `values` (one per label name, in order), created on first use.
    func lookup(_ values: [String]) -> Series {
        precondition(
            values.count == labelNames.count,
            "metric labels: \(values.count) values for \(labelNames.count) label names \(labelNames)"
        )
        if let single { return single }
        if let existing = probe(values, create: false) { return existing.series }
        guard reserve() else {
            return probe(labelNames.map { _ in Self.overflowValue }, create: true)!.series
        }
        let (series, createdHere) = probe(values, create: true)!
        // Another thread created the same series first: its place in the count was already taken.
        if !createdHere { created.subtract(1, ordering: .relaxed) }
        return series
    }

    /// Every series, ordered by label values, for a deterministic exposition.
    func snapshot() -> [(values: [String], series: Series)] {
        if let single { return [(values: [], series: single)] }
        return slots.compactMap { $0.entry.load() }.map { (values: $0.values, series: $0.series) }
            .sorted { $0.values.lexicographicallyPrecedes($1.values) }
    }

    private func reserve() -> Bool {
        var current = created.load(ordering: .relaxed)
        while current < maxSeries {
            let (exchanged, original) = created.compareExchange(
                expected: current,
                desired: current + 1,
                ordering: .relaxed
            )
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Linear probing from the values' hash. Without `create`, stops at the first empty slot: slots are
    /// never emptied, so a series that exists sits before it. With `create`, claims that slot, or goes on
    /// past it when another series claimed it in the meantime.
    private func probe(_ values: [String], create: Bool) -> (series: Series, createdHere: Bool)? {
        let mask = slots.count - 1
        var index = values.hashValue & mask
        for _ in 0..<slots.count {
            let slot = slots[index]
            if let entry = slot.entry.load() {
                if entry.values == values { return (entry.series, false) }
            } else {
                guard create else { return nil }
                let mine = Entry(values, make())
                let winner = slot.entry.storeIfNil(mine)
                if winner === mine { return (mine.series, true) }
                if winner.values == values { return (winner.series, false) }
            }
            index = (index + 1) & mask
        }
        return nil  // Unreachable: there are more slots than series can ever be created.
    }
}
