internal import CRdKafka

/// librdkafka settings given as text, as in `ATTEST_KAFKA_PROPERTIES` (SPEC 6).
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

    private static func trimmed(_ text: Substring) -> Substring {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }),
              let last = text.lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return text[first...last]
    }

    private static func invalid(_ detail: String) -> KafkaError {
        KafkaError(RD_KAFKA_RESP_ERR__INVALID_ARG, message: "Kafka properties: \(detail)")
    }
}
