/// Text compared and hashed as its UTF-8 bytes, as PostgreSQL compares `text` keys. Swift's `String` equality
/// is canonical equivalence: "caf\u{e9}" and "cafe\u{301}" are equal strings but two different jobIds, device
/// fingerprints and rows. A key that stands for a database key must compare as the database does, or two
/// jobs become one in a batch and two rows in the table.
///
/// Native strings hold their UTF-8 contiguously, so both work on the buffer at once: byte by byte through
/// `String.UTF8View`, a hasher call per byte, they were 3% of the worker's CPU at throughput (the batch's
/// sets of jobIds and device identities).
public enum ExactText {
    public static func equal(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let same = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in x.elementsEqual(y) }
        }
        return (same ?? nil) ?? a.utf8.elementsEqual(b.utf8)
    }

    public static func hash(_ text: String, into hasher: inout Hasher) {
        hasher.combine(text.utf8.count)
        let hashed: Void? = text.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil { Array(text.utf8).withUnsafeBytes { hasher.combine(bytes: $0) } }
    }
}
