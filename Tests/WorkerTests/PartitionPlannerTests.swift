import AttestCore
import Testing
@testable import Store
@testable import Worker

/// The partition planner without PostgreSQL: what to create and drop, from the partitions, now and the
/// settings alone.
@Suite struct PartitionPlannerTests {
    typealias P = PartitionPlanner
    static let day: Int64 = 86_400
    /// 2026-12-01T00:00:00Z, a UTC midnight.
    static let midnight = Timestamp(seconds: 1_796_083_200)
    static let settings = P.Settings(widthSeconds: day, retentionSeconds: 8 * day, lookbackSeconds: day, ahead: 3)

    static func at(_ seconds: Int64) -> Timestamp { midnight.adding(seconds: seconds) }

    static func day(_ n: Int64) -> P.Partition {
        P.Partition(name: "p\(n)", lower: at(n * day), upper: at((n + 1) * day))
    }

    static func creates(_ actions: [P.Action]) -> [ClosedRange<Int64>] {
        actions.compactMap {
            if case .create(let lower, let upper) = $0 { (lower.seconds - midnight.seconds)...(upper.seconds - midnight.seconds) } else { nil }
        }
    }

    static func drops(_ actions: [P.Action]) -> [String] {
        actions.compactMap { if case .drop(let name) = $0 { name } else { nil } }
    }

    @Test func anEmptyTableGetsTheCurrentSlotThenThoseAheadThenTheLookbackNewestFirst() {
        let actions = P.plan([], now: Self.at(3600), Self.settings)
        let d = Self.day
        #expect(Self.creates(actions) == [0...d, d...2 * d, 2 * d...3 * d, 3 * d...4 * d, -d...0])
        #expect(Self.drops(actions).isEmpty)
    }

    @Test func aCoveredTableNeedsNothingAndItsAheadCountIsThePartitionsStartingAfterNow() {
        let existing = (-1...3).map(Self.day)
        #expect(P.plan(existing, now: Self.at(3600), Self.settings).isEmpty)
        #expect(P.ahead(existing, now: Self.at(3600)) == 3)
        // Exactly at a boundary, the partition starting now is the current one, not ahead.
        #expect(P.ahead(existing, now: Self.at(Self.day)) == 2)
    }

    @Test func timeMovingOnCreatesTheNextSlotOnly() {
        let existing = (-1...3).map(Self.day)
        #expect(Self.creates(P.plan(existing, now: Self.at(Self.day + 1), Self.settings)) == [4 * Self.day...5 * Self.day])
    }

    @Test func aPartitionIsDroppedOnlyOnceItsWholeRangeIsOlderThanTheRetention() {
        let existing = (-10...3).map(Self.day)
        // At midnight day -9 ended exactly 8 days ago (the retention): expired; day -8 ended 7 days ago.
        let now = Self.at(0)
        #expect(Self.drops(P.plan(existing, now: now, Self.settings)) == ["p-10", "p-9"])
        #expect(P.expired(existing, now: now.adding(seconds: -1), Self.settings).map(\.name) == ["p-10"])
        #expect(P.expired(existing, now: now, Self.settings).map(\.name) == ["p-10", "p-9"])
    }

    @Test func piecesFillOnlyWhatPartitionsOfAnotherWidthLeaveUncovered() {
        // Minute slots next to a day partition (the migration's) and a hand-made one in the middle.
        let minute = P.Settings(widthSeconds: 60, retentionSeconds: 3600, lookbackSeconds: 60, ahead: 2)
        let existing = [
            P.Partition(name: "day", lower: Self.at(-Self.day), upper: Self.at(90)),
            P.Partition(name: "hand", lower: Self.at(130), upper: Self.at(150)),
        ]
        // now = 100 s: slot [60, 120) is covered up to 90; slots [120, 180) around the hand-made one.
        #expect(Self.creates(P.plan(existing, now: Self.at(100), minute)) == [90...120, 120...130, 150...180, 180...240])
    }

    @Test func unboundedPartitionsCoverEverythingOnTheirSideAndAreNeverDropped() {
        let existing = [
            P.Partition(name: "min", lower: nil, upper: Self.at(0)), P.Partition(name: "max", lower: Self.at(Self.day), upper: nil),
        ]
        let actions = P.plan(existing, now: Self.at(3600).adding(seconds: 100 * Self.day), Self.settings)
        #expect(Self.creates(actions).isEmpty)
        #expect(Self.drops(actions) == ["min"])
        #expect(P.ahead(existing, now: Self.at(0)) == 1)
        let later = P.plan(existing, now: Self.at(3600), Self.settings)
        #expect(Self.creates(later) == [0...Self.day])
    }

    @Test func aClockJumpPlansAtMostMaxCreatesNearestFirstAndABackwardJumpDropsNothingNew() {
        var settings = P.Settings(widthSeconds: 60, retentionSeconds: Self.day, lookbackSeconds: Self.day, ahead: 3, maxCreates: 5)
        let existing = (-1...3).map(Self.day)
        let jumped = Self.at(365 * Self.day)
        let actions = P.plan(existing, now: jumped, settings)
        let base = 365 * Self.day
        #expect(Self.creates(actions) == [base...base + 60, base + 60...base + 120, base + 120...base + 180, base + 180...base + 240,
            base - 60...base])
        #expect(Self.drops(actions) == (-1...3).map { "p\($0)" })
        settings.maxCreates = 0
        #expect(Self.creates(P.plan(existing, now: jumped, settings)).isEmpty)
        // Back in time: nothing is older than the retention than before.
        #expect(Self.drops(P.plan(existing, now: Self.at(-400 * Self.day), Self.settings)).isEmpty)
    }

    @Test func absurdSettingsAndClocksSaturateInsteadOfTrapping() {
        let extremes: [Timestamp] = [Timestamp(microseconds: .max), Timestamp(microseconds: .min), Timestamp(microseconds: 0)]
        let absurd = [
            P.Settings(widthSeconds: 0, retentionSeconds: 1, lookbackSeconds: 1),
            P.Settings(widthSeconds: -5, retentionSeconds: 1, lookbackSeconds: 1),
            P.Settings(widthSeconds: .max, retentionSeconds: .max, lookbackSeconds: .max, ahead: .max),
            P.Settings(widthSeconds: 1, retentionSeconds: .min, lookbackSeconds: .min, ahead: -3, maxCreates: -1),
            P.Settings(widthSeconds: 1, retentionSeconds: .max, lookbackSeconds: .max, ahead: .max, maxCreates: 10),
        ]
        for settings in absurd {
            for now in extremes {
                let actions = P.plan((-1...3).map(Self.day), now: now, settings)
                var creates = 0
                for case .create(let lower, let upper) in actions {
                    creates += 1
                    #expect(lower < upper)
                }
                #expect(creates <= max(0, settings.maxCreates))
            }
        }
        #expect(P.plan([], now: Self.midnight, absurd[0]).isEmpty)
    }

    @Test func aRetentionShorterThanTheLookbackNeverDropsAPartitionRowsAreStillStoredIn() {
        let short = P.Settings(widthSeconds: Self.day, retentionSeconds: 60, lookbackSeconds: Self.day, ahead: 3)
        let existing = (-3...3).map(Self.day)
        // Effective retention: lookback plus a width (2 days): at 01:00 day -3 (ended 2 days and 1 hour ago)
        // goes, day -2 (ended 1 day 1 hour ago: a job received then may still come) stays.
        #expect(Self.drops(P.plan(existing, now: Self.at(3600), short)) == ["p-3"])
    }
}
