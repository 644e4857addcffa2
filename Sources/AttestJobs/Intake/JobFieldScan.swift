/// The identifying members (jobId, teamId, bundleId, keyId) of a message that is not a readable job: over
/// the size limit (only a prefix was kept) or not valid JSON, so that its sender still gets a verdict
/// under its jobId instead of waiting blind.
///
/// One pass over the top-level object, left to right, linear in the bytes and bounded in memory: nested
/// values are skipped by counting brackets (no recursion, so any nesting depth costs one counter), other
/// members' strings are stepped over, and the scan stops at the first byte that breaks the top level's
/// shape or at the end of the prefix. Only a member whose string value ended before that counts. A member
/// named twice is ambiguous and counts as absent, as the strict parser refuses such objects.
public struct JobFieldScan: Sendable, Equatable {
    public var jobId: String?
    public var teamId: String?
    public var bundleId: String?
    public var keyId: String?

    /// Values longer than this are not echoed (a jobId must fit ``RecordClassifier/maxJobIdBytes`` anyway).
    public static let maxValueBytes = 256
    static let names = ["jobId", "teamId", "bundleId", "keyId"]

    public init(jobId: String? = nil, teamId: String? = nil, bundleId: String? = nil, keyId: String? = nil) {
        (self.jobId, self.teamId, self.bundleId, self.keyId) = (jobId, teamId, bundleId, keyId)
    }

    public init(_ bytes: [UInt8]) {
        var found = [String: String?]()
        var cursor = JSONParser.Cursor(bytes: bytes, maxDepth: 0)
        cursor.skipWhitespace()
        guard cursor.i < bytes.count, bytes[cursor.i] == UInt8(ascii: "{") else { return }
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
            if Self.names.contains(name) {
                // A second occurrence makes the member ambiguous: absent for good.
                found[name] = found[name] == nil ? value.flatMap { $0.utf8.count <= Self.maxValueBytes ? $0 : nil } : .some(nil)
            }
            cursor.skipWhitespace()
            guard cursor.i < bytes.count, bytes[cursor.i] == UInt8(ascii: ",") else { break }
            cursor.i += 1
        }
        jobId = found["jobId"] ?? nil
        teamId = found["teamId"] ?? nil
        bundleId = found["bundleId"] ?? nil
        keyId = found["keyId"] ?? nil
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
