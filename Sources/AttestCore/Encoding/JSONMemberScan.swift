/// The top-level string members of a JSON object that may be cut short or broken further on: what is still
/// readable of a message that is not valid JSON or was kept only in part.
///
/// One pass over the top-level object, left to right, linear in the bytes and bounded in memory: nested
/// values are skipped by counting brackets (no recursion, so any nesting depth costs one counter), other
/// members' strings are stepped over, and the scan stops at the first byte that breaks the top level's
/// shape or at the end of the bytes. Only a member whose string value ended before that counts. A member
/// named twice is ambiguous and counts as absent, as the strict parser refuses such objects.
public enum JSONMemberScan {
    /// The members among `names` whose values are strings of at most `maxValueBytes` bytes.
    public static func strings(named names: Set<String>, in bytes: [UInt8], maxValueBytes: Int) -> [String: String] {
        var found = [String: String?]()
        var cursor = JSONParser.Cursor(bytes: bytes, maxDepth: 0)
        cursor.skipWhitespace()
        guard cursor.i < bytes.count, bytes[cursor.i] == UInt8(ascii: "{") else { return [:] }
        cursor.i += 1
        while true {
            cursor.skipWhitespace()
            guard let name = cursor.string() else { break }
            cursor.skipWhitespace()
            guard cursor.i < bytes.count, bytes[cursor.i] == UInt8(ascii: ":") else { break }
            cursor.i += 1
            cursor.skipWhitespace()
            guard cursor.i < bytes.count else { break }
            var value: String?
            if bytes[cursor.i] == UInt8(ascii: "\"") {
                guard let text = cursor.string() else { break }
                value = text
            } else if !Self.skipValue(&cursor) {
                break
            }
            if names.contains(name) {
                // A second occurrence makes the member ambiguous: absent for good.
                found[name] = found[name] == nil ? value.flatMap { $0.utf8.count <= maxValueBytes ? $0 : nil } : .some(nil)
            }
            cursor.skipWhitespace()
            guard cursor.i < bytes.count, bytes[cursor.i] == UInt8(ascii: ",") else { break }
            cursor.i += 1
        }
        return found.compactMapValues { $0 }
    }


    /// Steps over one non-string value: a number or literal up to the next delimiter, an object or array to
    /// its matching bracket (strings inside stepped over whole, so brackets in them do not count). False
    /// when the bytes end first or a string inside is broken.
    private static func skipValue(_ cursor: inout JSONParser.Cursor) -> Bool {
        let bytes = cursor.bytes
        var depth = 0
        while cursor.i < bytes.count {
            switch bytes[cursor.i] {
            case UInt8(ascii: "\""):
                guard depth > 0, cursor.string() != nil else { return false }
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if depth == 0 { return true }  // the end of the top-level object after a bare value
                depth -= 1
                if depth == 0 {
                    cursor.i += 1
                    return true
                }
            case UInt8(ascii: ","), 0x20, 0x09, 0x0a, 0x0d:
                if depth == 0 { return true }
            default:
                break
            }
            cursor.i += 1
        }
        return false
    }
}
