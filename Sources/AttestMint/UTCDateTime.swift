import Foundation

/// A `Date` broken into UTC calendar fields without `DateFormatter` (locale-free, thread-safe, fast), for X.509
/// times and the receipt's RFC 3339 timestamps.
struct UTCDateTime {
    let year: Int
    let month: Int
    let day: Int
    let hour: Int
    let minute: Int
    let second: Int
    let millisecond: Int

    /// Rounds to the nearest millisecond, so a `Date` built from a decimal literal keeps its milliseconds despite
    /// binary floating point (X.509 times then drop the milliseconds).
    init(_ date: Date) {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let (days, msOfDay) = Self.floorDivide(milliseconds, 86_400_000)
        hour = Int(msOfDay / 3_600_000)
        minute = Int(msOfDay / 60_000 % 60)
        second = Int(msOfDay / 1000 % 60)
        millisecond = Int(msOfDay % 1000)
        // Howard Hinnant's civil_from_days.
        let (era, _) = Self.floorDivide(days + 719_468, 146_097)
        let dayOfEra = days + 719_468 - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = Int(dayOfYear - (153 * monthIndex + 2) / 5 + 1)
        month = Int(monthIndex < 10 ? monthIndex + 3 : monthIndex - 9)
        year = Int(yearOfEra + era * 400 + (month <= 2 ? 1 : 0))
    }

    /// YYYYMMDDHHMMSS, the digits X.509 times are made of.
    var digits: String {
        pad(year, 4) + pad(month, 2) + pad(day, 2) + pad(hour, 2) + pad(minute, 2) + pad(second, 2)
    }

    /// RFC 3339 with milliseconds, as Apple writes receipt times: 2026-04-21T18:13:12.153Z.
    var rfc3339: String {
        "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)).\(pad(millisecond, 3))Z"
    }

    private func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = (a % b + b) % b
        return ((a - remainder) / b, remainder)
    }
}
