/// A strict reader of the Prometheus text exposition format 0.0.4, stricter than Prometheus itself where
/// our output has no reason to use a freedom: no blank lines, no other comments, no timestamps, every family
/// announced by HELP then TYPE before its samples, samples of a family contiguous, no duplicate series,
/// histograms complete and cumulative. Throws on the first violation, naming the line.
struct Exposition {
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct Family {
        var name: String
        var help: String
        var type: String
        var samples: [Sample] = []
    }

    struct Violation: Error, CustomStringConvertible {
        let description: String
    }

    private(set) var families: [Family] = []

    func family(_ name: String) -> Family? { families.first { $0.name == name } }

    /// The value of the one sample with this name and these labels.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        families.lazy.flatMap(\.samples).first { $0.name == name && $0.labels == labels }?.value
    }

    init(parsing text: String) throws {
        guard text.isEmpty || text.hasSuffix("\n") else {
            throw Violation(description: "text does not end with a line feed")
        }
        var seenSeries = Set<String>()
        var pendingHelp: (name: String, help: String)?
        var lineNumber = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            lineNumber += 1
            func fail(_ why: String) -> Violation { Violation(description: "line \(lineNumber) \"\(line)\": \(why)") }
            if line.isEmpty { throw fail("blank line") }
            if line.hasPrefix("# HELP ") {
                let rest = line.dropFirst("# HELP ".count)
                guard let space = rest.firstIndex(of: " ") else { throw fail("HELP without text") }
                let name = String(rest[..<space])
                guard Self.isMetricName(name) else { throw fail("bad metric name") }
                guard families.allSatisfy({ $0.name != name }), pendingHelp == nil else {
                    throw fail("HELP repeated or misplaced")
                }
                pendingHelp = (name, try Self.unescape(rest[rest.index(after: space)...], quotes: false) { fail($0) })
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst("# TYPE ".count).split(separator: " ", omittingEmptySubsequences: false)
                guard parts.count == 2 else { throw fail("TYPE needs a name and a type") }
                let name = String(parts[0])
                guard let help = pendingHelp, help.name == name else { throw fail("TYPE not right after its HELP") }
                guard ["counter", "gauge", "histogram"].contains(parts[1]) else {
                    throw fail("unexpected type \(parts[1])")
                }
                families.append(Family(name: name, help: help.help, type: String(parts[1])))
                pendingHelp = nil
            } else if line.hasPrefix("#") {
                throw fail("unexpected comment")
            } else {
                guard pendingHelp == nil, var family = families.popLast() else { throw fail("sample before HELP/TYPE") }
                let sample = try Self.sample(line) { fail($0) }
                let allowed =
                    family.type == "histogram"
                    ? ["_bucket", "_sum", "_count"].map { family.name + $0 } : [family.name]
                guard allowed.contains(sample.name) else { throw fail("sample does not belong to \(family.name)") }
                if family.type == "histogram" {
                    guard (sample.name == family.name + "_bucket") == (sample.labels["le"] != nil) else {
                        throw fail("le on a non-bucket sample or a bucket without le")
                    }
                }
                if family.type == "counter", !(sample.value >= 0) { throw fail("negative or NaN counter") }
                let key =
                    sample.name + "|"
                    + sample.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
                guard seenSeries.insert(key).inserted else { throw fail("duplicate series") }
                family.samples.append(sample)
                families.append(family)
            }
        }
        guard pendingHelp == nil else { throw Violation(description: "HELP without TYPE at the end") }
        for family in families where family.type == "histogram" { try Self.checkHistogram(family) }
    }

    private static func checkHistogram(_ family: Family) throws {
        func fail(_ why: String) -> Violation { Violation(description: "histogram \(family.name): \(why)") }
        var groups: [[String: String]: [Sample]] = [:]
        for sample in family.samples {
            var key = sample.labels
            key["le"] = nil
            groups[key, default: []].append(sample)
        }
        for (labels, samples) in groups {
            let buckets = samples.filter { $0.name == family.name + "_bucket" }
            guard let last = buckets.last, last.labels["le"] == "+Inf" else {
                throw fail("\(labels): no +Inf bucket last")
            }
            let bounds = try buckets.map { bucket in
                guard let text = bucket.labels["le"], let bound = parseValue(Substring(text)) else {
                    throw fail("bad le")
                }
                return bound
            }
            guard zip(bounds, bounds.dropFirst()).allSatisfy({ $0 < $1 }) else {
                throw fail("\(labels): le not increasing")
            }
            guard zip(buckets, buckets.dropFirst()).allSatisfy({ $0.value <= $1.value }) else {
                throw fail("\(labels): buckets not cumulative")
            }
            guard let count = samples.first(where: { $0.name == family.name + "_count" }), count.value == last.value
            else {
                throw fail("\(labels): _count missing or not equal to the +Inf bucket")
            }
            guard samples.contains(where: { $0.name == family.name + "_sum" }) else { throw fail("\(labels): no _sum") }
        }
    }

    private static func sample(_ line: Substring, fail: (String) -> Violation) throws -> Sample {
        var index = line.startIndex
        while index < line.endIndex, line[index] != "{", line[index] != " " { index = line.index(after: index) }
        let name = String(line[..<index])
        guard isMetricName(name) else { throw fail("bad sample name") }
        var labels: [String: String] = [:]
        if index < line.endIndex, line[index] == "{" {
            index = line.index(after: index)
            while true {
                guard index < line.endIndex else { throw fail("unterminated label set") }
                if line[index] == "}" { index = line.index(after: index); break }
                var nameEnd = index
                while nameEnd < line.endIndex, line[nameEnd] != "=" { nameEnd = line.index(after: nameEnd) }
                let labelName = String(line[index..<nameEnd])
                guard isLabelName(labelName) || labelName == "le" else { throw fail("bad label name \(labelName)") }
                guard nameEnd < line.endIndex, line.index(after: nameEnd) < line.endIndex,
                    line[line.index(after: nameEnd)] == "\""
                else { throw fail("label value not quoted") }
                var valueEnd = line.index(nameEnd, offsetBy: 2)
                var escaped = false
                while valueEnd < line.endIndex {
                    if escaped {
                        escaped = false
                    } else if line[valueEnd] == "\\" {
                        escaped = true
                    } else if line[valueEnd] == "\"" {
                        break
                    }
                    valueEnd = line.index(after: valueEnd)
                }
                guard valueEnd < line.endIndex else { throw fail("unterminated label value") }
                let value = try unescape(line[line.index(nameEnd, offsetBy: 2)..<valueEnd], quotes: true, fail: fail)
                guard labels.updateValue(value, forKey: labelName) == nil else {
                    throw fail("label \(labelName) repeated")
                }
                index = line.index(after: valueEnd)
                guard index < line.endIndex else { throw fail("unterminated label set") }
                if line[index] == "," {
                    index = line.index(after: index)
                    guard index < line.endIndex, line[index] != "}" else { throw fail("trailing comma") }
                } else if line[index] != "}" {
                    throw fail("expected , or }")
                }
            }
        }
        guard index < line.endIndex, line[index] == " " else { throw fail("no single space before the value") }
        let valueText = line[line.index(after: index)...]
        guard !valueText.contains(" ") else { throw fail("timestamp or extra field") }
        guard let value = parseValue(valueText) else { throw fail("bad value \(valueText)") }
        return Sample(name: name, labels: labels, value: value)
    }

    /// Go's ParseFloat syntax as Prometheus reads it: decimal or exponent forms, `+Inf`, `-Inf`, `NaN`.
    static func parseValue(_ text: Substring) -> Double? {
        switch text {
        case "+Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default:
            guard !text.isEmpty, text.allSatisfy({ "0123456789.eE+-".contains($0) }) else { return nil }
            return Double(text)
        }
    }

    /// HELP allows `\\` and `\n`; label values also `\"`. Any other backslash sequence is an error.
    private static func unescape(_ text: Substring, quotes: Bool, fail: (String) -> Violation) throws -> String {
        var result = ""
        var iterator = text.makeIterator()
        while let character = iterator.next() {
            if character == "\"" && quotes { throw fail("unescaped quote") }
            if character != "\\" { result.append(character); continue }
            switch iterator.next() {
            case "\\": result.append("\\")
            case "n": result.append("\n")
            case "\"" where quotes: result.append("\"")
            default: throw fail("bad escape")
            }
        }
        return result
    }

    private static func isMetricName(_ name: String) -> Bool {
        name.wholeMatch(of: /[a-zA-Z_:][a-zA-Z0-9_:]*/) != nil
    }

    private static func isLabelName(_ name: String) -> Bool {
        name.wholeMatch(of: /[a-zA-Z_][a-zA-Z0-9_]*/) != nil && !name.hasPrefix("__")
    }
}
