import AttestCore
import AttestJobs
import Foundation
import KafkaRecords
import Testing

extension LiveStack {
    /// Issue 15 item 2 for what is no job, against a real worker: malformed messages a running worker
    /// dead-letters or answers, and the same bytes as lines to `attest-worker verify`, are classified by one
    /// code. A line the worker answers (an invalid job, or a dead letter with a readable jobId) gets that
    /// verdict from `verify`; one it dead-letters alone gets a job_invalid verdict under a null jobId with a
    /// reason of the dead letter's kind.
    @Suite struct ClassificationParityIntegrationTests {
        @Test func theWorkerAndVerifyClassifyMalformedMessagesAlike() throws {
            let topics = try Stack.topics("classify", partitions: 1)
            let tag = UUID().uuidString.prefix(8).lowercased()
            let limit = RecordClassifier.defaultMaxMessageBytes
            func padded(_ members: String) -> String {
                let head = "{" + members + (members.isEmpty ? "" : ",") + #""pad":""#
                return head + String(repeating: "a", count: limit + 1 - head.utf8.count - 2) + #""}"#
            }
            let lines = [
                "not json",
                #"{"jobId":"broken-\#(tag)","teamId":"\#(Jobs.teamId)","kind":"assertion",}"#,
                padded(#""jobId":"big-\#(tag)","keyId":"k-\#(tag)""#),
                padded(""),
                #"[{"jobId":"array-\#(tag)"}]"#,
                #"{"jobId":5}"#,
                #"{"jobId":""# + String(repeating: "j", count: 257) + #""}"#,
                #"{"jobId":"fields-\#(tag)","kind":"attestation"}"#,
                #"{"jobId":"time-\#(tag)","teamId":"\#(Jobs.teamId)","bundleId":"com.example.x","keyId":"a","assertion":"a","clientDataHash":"a","receivedAt":"yesterday"}"#,
            ]
            let answered = ["broken-\(tag)", "big-\(tag)", "fields-\(tag)", "time-\(tag)"]
            let deadLetters = 7

            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            try produce(topics.jobs, lines.map { (nil, Array($0.utf8)) })
            let verdicts = try TopicReader(topic: topics.verdicts)
            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob.count >= answered.count }, "\(worker.log.suffix(2000))")
            #expect(dead.read(seconds: 30) { $0.count >= deadLetters }, "\(worker.log.suffix(2000))")
            try #require(Set(verdicts.verdictsByJob.keys) == Set(answered))

            let file = FileManager.default.temporaryDirectory.appendingPathComponent("classify-\(UUID().uuidString).jsonl")
            defer { try? FileManager.default.removeItem(at: file) }
            try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
            let run = try Stack.run(Stack.binary, ["verify", file.path], capture: true)
            try #require(run.status == 0)
            let offline = run.output.split(separator: "\n").map { JSONValue.parse(Array($0.utf8)) }
            try #require(offline.count == lines.count)

            func comparable(_ verdict: JSONValue?) -> [(String, JSONValue)] {
                guard case .object(let members)? = verdict else { return [] }
                return members.filter { !["deviceIntelligence", "verifiedAt"].contains($0.0) }
            }
            let kinds: [String: Set<String>] = [
                "too_large": ["message_too_large"], "job_invalid": ["malformed_json", "invalid_field", "missing_field"],
            ]
            var deadAlone = 0
            for (i, verdict) in offline.enumerated() {
                if let jobId = verdict?["jobId"]?.stringValue {
                    let published = try #require(verdicts.verdictsByJob[jobId]?.first.flatMap { JSONValue.parse(Array($0.utf8)) }, "line \(i)")
                    let (w, o) = (comparable(published), comparable(verdict))
                    #expect(w.map(\.0) == o.map(\.0), "line \(i): members")
                    for ((name, a), (_, b)) in zip(w, o) { #expect(a == b, "line \(i): \(name) \(a.serialized()) vs \(b.serialized())") }
                    continue
                }
                // No jobId: the worker dead-lettered the line's message alone.
                deadAlone += 1
                let letter = try #require(
                    dead.messages.compactMap { JSONValue.parse($0.value) }.first { $0["source"]?["offset"] == .int(Int64(i)) }, "line \(i)")
                #expect(letter["jobId"] == nil, "line \(i)")
                let reasons = kinds[letter["reason"]?.stringValue ?? ""] ?? []
                #expect(verdict?["code"] == .string("job_invalid") && reasons.contains(verdict?["reason"]?.stringValue ?? ""), "line \(i)")
            }
            #expect(deadAlone == lines.count - answered.count)
        }
    }
}
