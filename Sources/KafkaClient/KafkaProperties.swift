internal import CRdKafka

/// librdkafka settings given as text, as in `ATTEST_KAFKA_PROPERTIES` (CONTRACT 6).
public enum KafkaProperties {
    /// Parses `key=value` pairs separated by commas or newlines into a dictionary for the clients.
    ///
    /// Whitespace around keys and values is dropped, empty entries (a trailing comma, blank lines) are
    /// skipped, the value is everything after the first `=` (so it may contain `=`), and a repeated key
    /// keeps its last value. Because commas separate pairs, a value cannot contain a comma: list-valued
    /// settings such as `bootstrap.servers` are passed separately. An entry without `=` or with an empty
    /// key throws; the error gives the entry's position, never its text, which may be part of a secret.
    public static func parse(_ text: String) throws(KafkaError) -> [String: String] {
        var properties: [String: String] = [:]
        let entries = text.split(omittingEmptySubsequences: false) { $0 == "," || $0 == "\n" }
        for (index, entry) in entries.enumerated() {
            let pair = trimmed(entry)
            if pair.isEmpty { continue }
            guard let equals = pair.firstIndex(of: "=") else {
                throw invalid("entry \(index + 1) has no '=' (expected key=value)")
            }
            let key = trimmed(pair[..<equals])
            guard !key.isEmpty else { throw invalid("entry \(index + 1) has an empty key") }
            properties[String(key)] = String(trimmed(pair[pair.index(after: equals)...]))
        }
        return properties
    }

    /// Whether a property's value is a secret, by what its key names: passwords, client secrets, JAAS and
    /// OAUTHBEARER configurations, private keys inline (`ssl.key.pem`, `ssl_key`…), key stores, tokens.
    /// Deliberately broad: a path hidden from a log costs nothing, a leaked secret costs a rotation.
    public static func namesSecret(_ key: some StringProtocol) -> Bool {
        let key = key.lowercased()
        return ["password", "secret", "jaas", "oauthbearer.config", "ssl.key", "ssl_key", "keystore", "token", "credential", "private"]
            .contains { key.contains($0) }
    }

    /// `text` with the value of every secret property (``namesSecret(_:)``) replaced by `***`, separators
    /// and everything else kept. An entry without `=` may be the rest of a value that contained a comma
    /// (not valid here, but it may still be typed), so it is replaced whole.
    public static func redacted(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while !rest.isEmpty {
            let end = rest.firstIndex { $0 == "," || $0 == "\n" } ?? rest.endIndex
            let entry = rest[..<end]
            if let equals = entry.firstIndex(of: "=") {
                out += namesSecret(entry[..<equals]) ? entry[...equals] + "***" : entry
            } else {
                out += trimmed(entry).isEmpty ? entry : "***"
            }
            if end == rest.endIndex { break }
            out.append(rest[end])
            rest = rest[rest.index(after: end)...]
        }
        return out
    }

    /// librdkafka settings that only a consumer takes, left out of the producer's configuration so that a
    /// shared ATTEST_KAFKA_PROPERTIES does not fill the log with warnings.
    public static let consumerOnly: Set<String> = [
        "group.id", "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms", "auto.offset.reset",
        "enable.auto.commit", "auto.commit.interval.ms", "enable.auto.offset.store", "fetch.wait.max.ms",
        "fetch.min.bytes", "fetch.max.bytes", "partition.assignment.strategy", "group.protocol", "isolation.level",
        "queued.max.messages.kbytes", "queued.min.messages",
    ]

    private static func trimmed(_ text: Substring) -> Substring {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }),
              let last = text.lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return text[first...last]
    }

    private static func invalid(_ detail: String) -> KafkaError {
        KafkaError(RD_KAFKA_RESP_ERR__INVALID_ARG, message: "Kafka properties: \(detail)")
    }
}
