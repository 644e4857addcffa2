import AttestCore

/// What partition maintenance does next to one time-partitioned table, decided from the partitions it has,
/// the time and the settings alone (no database), so every rule is unit-tested and every worker would
/// decide the same. ``PartitionMaintainer`` carries the actions out, one at a time under its lock.
///
/// Partitions are slots of `width` aligned to the Unix epoch (a day's width starts at UTC midnight). The
/// table must have a partition for every time a row can be stored under now: from `lookback` before now
/// (a job received that long ago is still decided) to `ahead` slots after the current one, so rows never
/// wait for maintenance. Where an existing partition (of another width, or made by hand) covers part of a
/// slot, only the uncovered pieces are created. A partition whose whole range is older than the retention
/// is dropped. Times are checked arithmetic: an absurd clock or setting saturates, never traps.
public enum PartitionPlanner {
    public struct Settings: Sendable, Equatable {
        /// The width of a new partition (ATTEST_PARTITION_WIDTH).
        public var widthSeconds: Int64
        /// A partition is dropped once its upper bound is this far behind now.
        public var retentionSeconds: Int64
        /// How far back of now rows are still stored (the maximum job age).
        public var lookbackSeconds: Int64
        /// Slots after the current one that must exist.
        public var ahead: Int
        /// At most this many creations are planned (nearest to now first), so a clock that jumped far does
        /// not plan a year of partitions in one round.
        public var maxCreates: Int

        public init(widthSeconds: Int64, retentionSeconds: Int64, lookbackSeconds: Int64, ahead: Int = 3, maxCreates: Int = 64) {
            self.widthSeconds = widthSeconds
            self.retentionSeconds = retentionSeconds
            self.lookbackSeconds = lookbackSeconds
            self.ahead = ahead
            self.maxCreates = maxCreates
        }
    }

    /// One attached partition with a range (the DEFAULT partition is not one); a nil bound is unbounded
    /// (MINVALUE/MAXVALUE, as an operator may have made).
    public struct Partition: Sendable, Equatable {
        public var name: String
        public var lower: Timestamp?
        public var upper: Timestamp?

        public init(name: String, lower: Timestamp?, upper: Timestamp?) {
            self.name = name
            self.lower = lower
            self.upper = upper
        }

        var from: Int64 { lower?.microseconds ?? .min }
        var to: Int64 { upper?.microseconds ?? .max }
    }

    public enum Action: Sendable, Equatable {
        case create(lower: Timestamp, upper: Timestamp)
        case drop(name: String)
    }

    /// Creations first (the current slot, then ahead in order, then back of now, newest first), then drops
    /// (oldest first).
    public static func plan(_ existing: [Partition], now: Timestamp, _ settings: Settings) -> [Action] {
        guard settings.widthSeconds > 0 else { return [] }
        let sorted = existing.filter { $0.from < $0.to }.sorted { $0.from < $1.from }
        let width = micros(settings.widthSeconds)
        let current = floorDiv(now.microseconds, width)
        let oldest = floorDiv(now.microseconds.subtractingSaturated(micros(max(0, settings.lookbackSeconds))), width)
        let newest = current.addingSaturated(Int64(max(0, settings.ahead)))
        var creates = [Action]()
        // Ahead (with the current slot), then back; a slot that partitions cover wholly skips to where they
        // end, so the steps are bounded by the creations and the partitions, whatever the settings.
        var slot = current
        while slot <= newest, creates.count < settings.maxCreates, let gaps = pieces(slot: slot, width: width, sorted) {
            creates += gaps.actions
            let next = gaps.actions.isEmpty ? max(slot.addingSaturated(1), floorDiv(gaps.coveredTo, width)) : slot.addingSaturated(1)
            if next == slot { break }
            slot = next
        }
        slot = current.subtractingSaturated(1)
        while slot >= oldest, slot < current, creates.count < settings.maxCreates,
            let gaps = pieces(slot: slot, width: width, sorted)
        {
            creates += gaps.actions.reversed()
            let previous = gaps.actions.isEmpty
                ? min(slot.subtractingSaturated(1), floorDiv(gaps.coveredFrom.subtractingSaturated(1), width)) : slot.subtractingSaturated(1)
            if previous == slot || gaps.coveredFrom == .min { break }
            slot = previous
        }
        return Array(creates.prefix(max(0, settings.maxCreates))) + expired(existing, now: now, settings).map { .drop(name: $0.name) }
    }

    /// The partitions wholly older than the retention, oldest first. A retention shorter than the lookback
    /// plus a width (which the configuration refuses) counts as that, so a partition rows can still be
    /// stored in is never dropped (and created again).
    public static func expired(_ existing: [Partition], now: Timestamp, _ settings: Settings) -> [Partition] {
        let floor = max(0, settings.lookbackSeconds).addingSaturated(max(0, settings.widthSeconds))
        let horizon = now.microseconds.subtractingSaturated(micros(max(settings.retentionSeconds, floor)))
        return existing.filter { $0.upper != nil && $0.to <= horizon }.sorted { $0.to < $1.to }
    }

    /// How many partitions start after now.
    public static func ahead(_ existing: [Partition], now: Timestamp) -> Int {
        existing.filter { $0.lower != nil && $0.from > now.microseconds }.count
    }

    /// The parts of slot `index` that no partition covers, in order, and how far the partitions that
    /// cover it wholly reach either side; nil when the slot is beyond the representable times.
    static func pieces(slot index: Int64, width: Int64, _ sorted: [Partition])
        -> (actions: [Action], coveredFrom: Int64, coveredTo: Int64)?
    {
        let (start, overflow) = index.multipliedReportingOverflow(by: width)
        let (end, beyond) = start.addingReportingOverflow(width)
        guard !overflow, !beyond else { return nil }
        // The first partition that ends after the slot starts (partitions do not overlap, so their upper
        // bounds are in order too).
        var low = 0, high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid].to <= start { low = mid + 1 } else { high = mid }
        }
        var actions = [Action]()
        var cursor = start
        var i = low
        while i < sorted.count, sorted[i].from < end, cursor < end {
            if sorted[i].from > cursor {
                actions.append(.create(lower: Timestamp(microseconds: cursor), upper: Timestamp(microseconds: sorted[i].from)))
            }
            cursor = max(cursor, sorted[i].to)
            i += 1
        }
        if cursor < end { actions.append(.create(lower: Timestamp(microseconds: cursor), upper: Timestamp(microseconds: end))) }
        let coveredFrom = actions.isEmpty ? min(start, sorted[low].from) : start
        return (actions, coveredFrom, actions.isEmpty ? cursor : end)
    }

    static func micros(_ seconds: Int64) -> Int64 { seconds.multipliedSaturated(1_000_000) }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }
}

fileprivate extension Int64 {
    func addingSaturated(_ other: Int64) -> Int64 {
        let (value, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : value
    }

    func subtractingSaturated(_ other: Int64) -> Int64 {
        let (value, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other > 0 ? .min : .max) : value
    }

    func multipliedSaturated(_ other: Int64) -> Int64 {
        let (value, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? ((self < 0) == (other < 0) ? .max : .min) : value
    }
}
