extension Timestamp {
    /// The UTC calendar month, "YYYY-MM": the period monthly active devices are counted in.
    public var utcMonth: String {
        let days = seconds >= 0 ? seconds / 86_400 : -((-seconds + 86_399) / 86_400)
        let date = Self.civil(days: days)
        return Self.pad(date.year, 4) + "-" + Self.pad(date.month, 2)
    }
}
