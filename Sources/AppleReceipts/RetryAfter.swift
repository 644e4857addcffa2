import AttestCore
import Foundation

/// Apple's `Retry-After` on a 429 or 5xx (RFC 9110 §10.2.3): delay-seconds or an IMF-fixdate HTTP date,
/// bounded to ``maxSeconds`` so a hostile or broken value cannot park a team's refreshes for years; a
/// date in the past is no wait at all. Anything else (the obsolete date forms included) is ignored: the
/// scheduler's own back-off applies.
enum RetryAfter {
    static let maxSeconds: Int64 = 24 * 3600

    static func parse(_ value: String?, now: Timestamp) -> Duration? {
        guard let value, value.utf8.count <= 64 else { return nil }
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            // More than 10 digits is beyond any bound anyway.
            let seconds = text.utf8.count > 10 ? maxSeconds : min(Int64(text)!, maxSeconds)
            return .seconds(seconds)
        }
        guard let date = httpDate(text) else { return nil }
        return .seconds(min(max(date.seconds - now.seconds, 0), maxSeconds))
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT`, rewritten as RFC 3339 for Timestamp's parser (which checks the
    /// calendar); the day name is checked for form only, as RFC 9110 lets recipients do.
    static func httpDate(_ text: String) -> Timestamp? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), days.contains(String(parts[0].dropLast())),
            parts[1].count == 2, let month = months.firstIndex(of: parts[2]), parts[3].count == 4, parts[4].count == 8,
            parts[5] == "GMT", (parts[1] + parts[3]).utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else { return nil }
        let monthText = month < 9 ? "0\(month + 1)" : "\(month + 1)"
        return Timestamp(rfc3339: "\(parts[3])-\(monthText)-\(parts[1])T\(parts[4])Z")
    }
}
