/// ATTEST_REPLY_TOPICS: the topics a job may name in `reply-to`. Exact names, or prefixes written with a
/// trailing `*`; empty (the default) allows none, so a job cannot make the worker write where the operator
/// did not say. The worker's own topics (jobs, verdicts, dead letters) are never allowed, whatever the list
/// says: a verdict published into a jobs topic would be consumed as a job.
public struct ReplyTopics: Sendable, Equatable {
    public let exact: Set<String>
    public let prefixes: [String]
    public let reserved: Set<String>

    public static let none = ReplyTopics(exact: [], prefixes: [], reserved: [])

    init(exact: Set<String>, prefixes: [String], reserved: Set<String>) {
        self.exact = exact
        self.prefixes = prefixes
        self.reserved = reserved
    }

    /// Comma-separated entries (spaces around them ignored); throws the first entry that is neither a
    /// topic name nor one followed by `*` (a bare `*` allows every topic but the reserved ones).
    public init(parsing text: String, reserved: [String]) throws(Invalid) {
        var exact = Set<String>()
        var prefixes = [String]()
        for raw in text.split(separator: ",", omittingEmptySubsequences: false) {
            let entry = Self.trimmed(raw)
            if entry.isEmpty {
                if text.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
                throw Invalid(entry: entry, detail: "an empty entry")
            }
            if entry.hasSuffix("*") {
                let prefix = String(entry.dropLast())
                guard prefix.isEmpty || prefix.utf8.allSatisfy(JobHeaders.isTopicByte),
                    prefix.utf8.count < JobHeaders.maxTopicBytes
                else { throw Invalid(entry: entry, detail: "not a topic name prefix followed by *") }
                prefixes.append(prefix)
            } else {
                guard let name = JobHeaders.topicName(Array(entry.utf8)) else {
                    throw Invalid(entry: entry, detail: "not a topic name (1 to 249 of A-Z a-z 0-9 . _ -)")
                }
                exact.insert(name)
            }
        }
        self.init(exact: exact, prefixes: prefixes, reserved: Set(reserved))
    }

    public struct Invalid: Error, CustomStringConvertible {
        public let entry: String
        public let detail: String
        public var description: String { "\"\(entry)\" is \(detail)" }
    }

    private static func trimmed(_ text: Substring) -> String {
        var slice = text
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }

    public var isEmpty: Bool { exact.isEmpty && prefixes.isEmpty }

    public func allows(_ topic: String) -> Bool {
        guard !reserved.contains(topic) else { return false }
        return exact.contains(topic) || prefixes.contains { topic.hasPrefix($0) }
    }
}
