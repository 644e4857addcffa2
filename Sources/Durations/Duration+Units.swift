/// Duration in the units the C and Foundation APIs take, written once for every module (this one depends on
/// nothing, so the thin C owners can use it without pulling in the parsers).
///
/// All three read the exact attosecond count, so no conversion overflows: whole units round toward zero and
/// saturate at Int's bounds (a "wait forever" of `.seconds(Int64.max)` is Int.max nanoseconds, not a trap).
extension Duration {
    /// Whole nanoseconds, toward zero, clamped to Int: for DispatchTime and DispatchTimeInterval.
    public var wholeNanoseconds: Int { Int(clamping: attoseconds / 1_000_000_000) }

    /// Whole milliseconds, toward zero, clamped to Int: for librdkafka's timeouts (clamp again to Int32 there).
    public var wholeMilliseconds: Int { Int(clamping: attoseconds / 1_000_000_000_000_000) }

    /// Seconds as a Double: for Foundation's TimeInterval and for metrics, which Prometheus keeps in seconds.
    /// From the two 64-bit components, not the 128-bit attosecond count, whose conversion to Double is a
    /// generic routine that showed in the lanes' profiles (they time every job's stages).
    public var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
