import Durations
import Testing

/// The conversions at their edges: exact values, truncation toward zero on both sides, and saturation where
/// a unit count does not fit an Int (the helpers they replace trapped there).
@Suite struct DurationUnitsTests {
    @Test func exactValues() {
        #expect(Duration.zero.wholeNanoseconds == 0)
        #expect(Duration.zero.wholeMilliseconds == 0)
        #expect(Duration.zero.timeInterval == 0)
        #expect(Duration.milliseconds(1500).wholeNanoseconds == 1_500_000_000)
        #expect(Duration.milliseconds(1500).wholeMilliseconds == 1500)
        #expect(Duration.milliseconds(1500).timeInterval == 1.5)
        #expect(Duration.nanoseconds(1).wholeNanoseconds == 1)
        #expect(Duration.seconds(86_400).wholeMilliseconds == 86_400_000)
        #expect(Duration.microseconds(250).timeInterval == 0.000_25)
    }

    @Test func partialUnitsRoundTowardZero() {
        #expect((Duration.nanoseconds(3) / 2).wholeNanoseconds == 1)
        #expect((Duration.nanoseconds(-3) / 2).wholeNanoseconds == -1)
        #expect(Duration.nanoseconds(999_999).wholeMilliseconds == 0)
        #expect(Duration.nanoseconds(-999_999).wholeMilliseconds == 0)
        #expect(Duration.nanoseconds(1_999_999).wholeMilliseconds == 1)
        #expect(Duration.nanoseconds(-1_999_999).wholeMilliseconds == -1)
        #expect(Duration(attoseconds: 1).wholeNanoseconds == 0)
        #expect(Duration(attoseconds: 1).timeInterval == 1e-18)
    }

    @Test func negativeDurations() {
        #expect(Duration.milliseconds(-1500).wholeNanoseconds == -1_500_000_000)
        #expect(Duration.milliseconds(-1500).wholeMilliseconds == -1500)
        #expect(Duration.milliseconds(-1500).timeInterval == -1.5)
        // Seconds and a fraction of opposite signs in the constructor still add up.
        #expect(Duration(secondsComponent: -2, attosecondsComponent: 500_000_000_000_000_000).wholeMilliseconds == -1500)
        #expect(Duration(secondsComponent: -2, attosecondsComponent: 500_000_000_000_000_000).timeInterval == -1.5)
    }

    @Test func hugeDurationsSaturate() {
        let huge = Duration.seconds(Int64.max)
        #expect(huge.wholeNanoseconds == Int.max)
        #expect(huge.wholeMilliseconds == Int.max)
        #expect(huge.timeInterval == Double(Int64.max))
        let hugeNegative = Duration.seconds(Int64.min)
        #expect(hugeNegative.wholeNanoseconds == Int.min)
        #expect(hugeNegative.wholeMilliseconds == Int.min)
        #expect(hugeNegative.timeInterval == Double(Int64.min))
        // The largest nanosecond count that fits is kept exactly; one more saturates.
        #expect(Duration.nanoseconds(Int64.max).wholeNanoseconds == Int.max)
        #expect((Duration.nanoseconds(Int64.max) + .nanoseconds(1)).wholeNanoseconds == Int.max)
        #expect((Duration.nanoseconds(Int64.min) - .nanoseconds(1)).wholeNanoseconds == Int.min)
        #expect(Duration.seconds(9_223_372_036_854_775).wholeMilliseconds == 9_223_372_036_854_775_000)
    }
}
