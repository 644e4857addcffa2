/// Text compared and hashed as its UTF-8 bytes, as PostgreSQL compares `text` keys. Swift's `String` equality
/// is canonical equivalence: "caf\u{e9}" and "cafe\u{301}" are equal strings but two different jobIds, device
/// fingerprints and rows. A key that stands for a database key must compare as the database does, or two
/// jobs become one in a batch and two rows in the table.
public enum ExactText {
    public static func equal(_ a: String, _ b: String) -> Bool { a.utf8.elementsEqual(b.utf8) }

    public static func hash(_ text: String, into hasher: inout Hasher) {
        hasher.combine(text.utf8.count)
        for byte in text.utf8 { hasher.combine(byte) }
    }
}
