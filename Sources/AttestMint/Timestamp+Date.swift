import AttestCore
import Foundation

extension Timestamp {
    /// `date` rounded to the nearest millisecond, so a `Date` built from a decimal literal keeps its milliseconds
    /// despite binary floating point (X.509 times then drop them).
    init(_ date: Date) {
        self.init(microseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()) * 1000)
    }
}
