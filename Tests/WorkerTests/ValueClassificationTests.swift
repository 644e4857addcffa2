import AttestJobs
import AttestVerifier
import Testing

/// ``RecordClassifier/classify(value:bytes:cut:)``, the checks the worker's records and `verify`'s lines
/// share: each value that is no job gets one dead-letter text and one rejection, and only a value too large
/// or not JSON is answered under a jobId a scan still reads.
@Suite struct ValueClassificationTests {
    static let classifier = RecordClassifier(maxMessageBytes: 100)

    /// The rejection and whether it is answered, of a value that is no job (nil: a job or an invalid job).
    static func notAJob(_ text: String, bytes: Int? = nil, cut: Bool = false) -> (String, String, Bool)? {
        let value = Array(text.utf8)
        guard case .failure(let n) = classifier.classify(value: value, bytes: bytes ?? value.count, cut: cut) else { return nil }
        return ("\(n.reason.rawValue) \(n.failure.description)", n.message, n.answerFields(in: value) != nil)
    }

    @Test func theSizeLimitIsOnTheValuesBytesAndACutValueIsNeverRead() throws {
        let atLimit = #"{"jobId":"j","pad":""# + String(repeating: "a", count: 100 - 22) + #""}"#
        #expect(atLimit.utf8.count == 100)
        #expect(Self.notAJob(atLimit) == nil, "a value of exactly the limit is read")
        let over = try #require(Self.notAJob(atLimit + " "))
        #expect(over.0.hasPrefix("too_large job_invalid/message_too_large") && over.1 == "message over 100 bytes" && over.2)
        #expect(Self.notAJob(#"{"jobId":"j"}"#, bytes: 101)?.0.hasPrefix("too_large") == true, "the record's size, not what was kept")
        #expect(Self.notAJob(#"{"jobId":"j"}"#, cut: true)?.2 == true, "a prefix is too large and answered")
    }

    @Test func eachValueThatIsNoJobHasOneReasonAndOnlyUnreadOnesAreAnswered() throws {
        let cases: [(String, String, String, Bool)] = [
            (#"{"jobId":"j",}"#, "job_invalid job_invalid/malformed_json", "not a JSON object", true),
            ("not json", "job_invalid job_invalid/malformed_json", "not a JSON object", false),
            (#"[{"jobId":"j"}]"#, "job_invalid job_invalid/invalid_field", "not a JSON object", false),
            (#"{"kind":"assertion"}"#, "job_invalid job_invalid/missing_field", "no usable jobId (a string of 1 to 256 bytes)", false),
            (#"{"jobId":7}"#, "job_invalid job_invalid/invalid_field", "no usable jobId (a string of 1 to 256 bytes)", false),
            (#"{"jobId":""}"#, "job_invalid job_invalid/invalid_field", "no usable jobId (a string of 1 to 256 bytes)", false),
        ]
        for (value, reason, message, answered) in cases {
            let got = try #require(Self.notAJob(value), "\(value)")
            #expect(got.0.hasPrefix(reason) && got.1 == message && got.2 == answered, "\(value): \(got)")
        }
        #expect(Self.notAJob(#"{"jobId":"j"}"#) == nil, "a jobId makes it a job, valid or not")
    }
}
