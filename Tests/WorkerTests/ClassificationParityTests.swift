import AttestCore
import AttestJobs
import AttestVerifier
import KafkaClient
import Testing
import Worker

/// The worker's intake and the offline `verify` classify a value with one ``RecordClassifier`` at one size
/// limit: every malformed line gets from `verify` the verdict the worker publishes for the same record (its
/// job_invalid verdict, or the verdict answering its dead letter), and where the worker dead-letters alone,
/// a job_invalid verdict under a null jobId with a reason of the dead letter's kind. A check, code, reason or limit that
/// one path has and the other not fails here.
@Suite struct ClassificationParityTests {
    typealias B = BatchProcessorTests
    static let limit = RecordClassifier.defaultMaxMessageBytes

    /// A JSON object of exactly `bytes` bytes: `members`, then a padding member.
    static func padded(_ members: String, to bytes: Int) -> String {
        let head = "{" + members + (members.isEmpty ? "" : ",") + #""pad":""#
        return head + String(repeating: "a", count: bytes - head.utf8.count - 2) + #""}"#
    }

    /// Malformed lines, each named for what is wrong with it.
    static let lines: [(name: String, line: String)] = [
        ("not JSON", "not json"),
        ("not JSON, jobId readable", #"{"jobId":"broken-1","teamId":"TEAMBATCH1","keyId":"k","kind":"assertion",}"#),
        ("not JSON, jobId too long", #"{"jobId":""# + String(repeating: "j", count: 257) + #"",}"#),
        ("a member named twice", #"{"jobId":"twice-1","jobId":"twice-2"}"#),
        ("truncated", #"{"jobId":"cut-1","kind":"#),
        ("too large, jobId readable", padded(#""jobId":"big-1","bundleId":"com.example.batch""#, to: limit + 1)),
        ("too large, no jobId", padded("", to: limit + 1)),
        ("at the limit", padded(#""jobId":"limit-1""#, to: limit)),
        ("an array", #"[{"jobId":"in-array"}]"#),
        ("a string", #""jobId""#),
        ("null", "null"),
        ("no jobId", #"{"kind":"attestation"}"#),
        ("jobId null", #"{"jobId":null}"#),
        ("jobId a number", #"{"jobId":5}"#),
        ("jobId empty", #"{"jobId":""}"#),
        ("jobId 257 bytes", #"{"jobId":""# + String(repeating: "j", count: 257) + #""}"#),
        ("jobId 256 bytes", #"{"jobId":""# + String(repeating: "j", count: 256) + #""}"#),
        ("jobId with NUL", #"{"jobId":"a\u0000b"}"#),
        ("missing fields", #"{"jobId":"fields-1","kind":"attestation"}"#),
        ("bad kind", #"{"jobId":"kind-1","kind":"other"}"#),
        ("bad teamId", #"{"jobId":"team-1","teamId":"nope","bundleId":"com.example.batch","keyId":"a","attestationObject":"a","clientDataHash":"a","receivedAt":"2026-04-24T03:06:40Z"}"#),
        ("bad receivedAt", #"{"jobId":"time-1","teamId":"TEAMBATCH1","bundleId":"com.example.batch","keyId":"a","assertion":"a","clientDataHash":"a","receivedAt":"yesterday"}"#),
    ]

    /// The verdict reasons that go with each kind of dead letter (its reason and message).
    static let deadLetterReasons: [String: Set<String>] = [
        "too_large message over \(limit) bytes": ["message_too_large"],
        "job_invalid not a JSON object": ["malformed_json", "invalid_field"],
        "job_invalid no usable jobId (a string of 1 to \(RecordClassifier.maxJobIdBytes) bytes)": ["missing_field", "invalid_field"],
    ]

    @Test func everyMalformedLineGetsTheWorkersAnswer() throws {
        let verifier = JobVerifier(trust: B.trust, clock: FixedClock(Timestamp(seconds: 1_777_000_000)))
        let processor = BatchProcessor(
            verifier: verifier, store: FakeStore(), devices: DeviceCache(),
            settings: BatchProcessor.Settings(verdictsTopic: "verdicts", deadLetterTopic: "dead"))
        let messages = Self.lines.enumerated().map { i, c in
            KafkaMessage(topic: "jobs", partition: 0, offset: Int64(i), key: nil, value: Array(c.line.utf8), headers: [], timestampMs: nil)
        }
        let out = try processor.process(messages)
        #expect(out.count == Self.lines.count)
        var outcomes = Set<String>()
        for (c, published) in zip(Self.lines, out) {
            let offline = verifier.offlineVerdict(for: c.line, policy: .production).json
            let answer: JSONValue
            if published.topic == "dead" {
                let letter = try #require(JSONValue.parse(published.value), "\(c.name)")
                if let then = published.then.first {
                    answer = try #require(JSONValue.parse(then.value))
                    outcomes.insert("answered \(answer["reason"]?.stringValue ?? "")")
                } else {
                    // Dead-lettered alone: verify prints what the worker cannot send, under a null jobId, with
                    // the reason of the dead letter's kind.
                    let kind = "\(letter["reason"]?.stringValue ?? "") \(letter["message"]?.stringValue ?? "")"
                    let reasons = Self.deadLetterReasons[kind] ?? []
                    #expect(offline["jobId"] == .null && offline["code"] == .string("job_invalid"), "\(c.name)")
                    #expect(reasons.contains(offline["reason"]?.stringValue ?? ""), "\(c.name): \(kind) \(offline.serialized())")
                    outcomes.insert("dead \(letter["message"]?.stringValue ?? "")/\(offline["reason"]?.stringValue ?? "")")
                    continue
                }
            } else {
                answer = try #require(JSONValue.parse(published.value))
                outcomes.insert("verdict \(answer["reason"]?.stringValue ?? "ok")")
            }
            let (w, o) = (CheckListParityTests.comparable(answer), CheckListParityTests.comparable(offline))
            #expect(w.map(\.0) == o.map(\.0), "\(c.name): members")
            for ((name, a), (_, b)) in zip(w, o) { #expect(a == b, "\(c.name): \(name) \(a.serialized()) vs \(b.serialized())") }
        }
        // Every kind of malformed line is here: answered too large and not JSON, dead-lettered not JSON,
        // too large, not an object, missing and unusable jobId, and invalid jobs.
        #expect(outcomes.count == 9, "\(outcomes.sorted())")
    }
}
