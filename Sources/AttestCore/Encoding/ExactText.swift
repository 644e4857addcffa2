import Foundation

/// Text compared and hashed as its UTF-8 bytes, as PostgreSQL compares `text` keys. Swift's `String` equality
/// is canonical equivalence: "caf\u{e9}" and "cafe\u{301}" are equal strings but two different jobIds, device
/// fingerprints and rows. A key that stands for a database key must compare as the database does, or two
/// jobs become one in a batch and two rows in the table.
///
/// All three work on the string's UTF-8 buffer at once (`withUTF8`, then `memcmp` and `memchr`): byte by
/// byte through `String.UTF8View`, a hasher call per byte, they were 3% of the worker's CPU at throughput
/// (the batch's sets of jobIds and device identities, and every job field checked for NUL).
public enum ExactText {
    public static func equal(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var (a, b) = (a, b)
        return a.withUTF8 { x in
            b.withUTF8 { y in
                // Equal counts: one without a buffer means both are empty.
                guard let p = x.baseAddress, let q = y.baseAddress else { return true }
                return memcmp(p, q, x.count) == 0
            }
        }
    }

    /// Whether `text` holds U+0000, which PostgreSQL text cannot store and C strings end at.
    public static func containsNUL(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { buffer in buffer.baseAddress.map { memchr($0, 0, buffer.count) != nil } ?? false }
    }

    public static func hash(_ text: String, into hasher: inout Hasher) {
        var text = text
        hasher.combine(text.utf8.count)
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
