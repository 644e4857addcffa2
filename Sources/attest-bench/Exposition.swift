/// The worker's /metrics text (Prometheus exposition) as the benchmark reads it: the labelled samples of
/// one metric. The worker writes labels as `name="value",…` with no escapes in the values it uses here.
enum Exposition {
    /// One line of the metric: its labels (between the braces) and its value as written.
    struct Sample {
        let labels: Substring
        let value: Substring

        /// The value as a count from 0 to `limit`; nil when it is not one.
        func count(below limit: Double) -> Double? {
            guard let number = Double(value), number >= 0, number < limit else { return nil }
            return number
        }
    }

    /// The lines of `metric` that carry labels (`metric{…} value`); other lines are skipped.
    static func samples(of metric: String, in text: String) -> [Sample] {
        let prefix = metric + "{"
        return text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix(prefix), let close = line.lastIndex(of: "}") else { return nil }
            return Sample(
                labels: line[line.index(line.startIndex, offsetBy: prefix.count)..<close],
                value: line[line.index(after: close)...].trimmingPrefix(" "))
        }
    }

    /// The value of label `name` in a sample's labels, or nil.
    static func label(_ name: String, in labels: Substring) -> String? {
        for pair in labels.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0] == name, parts[1].count >= 2, parts[1].first == "\"", parts[1].last == "\"" else { continue }
            return String(parts[1].dropFirst().dropLast())
        }
        return nil
    }
}
