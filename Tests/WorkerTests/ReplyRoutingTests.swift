import AttestCore
import AttestJobs
import AttestMint
import AttestVerifier
import Foundation
import KafkaClient
import Observability
import Store
import Testing
import Worker

/// Reply routing and the headers a verdict passes on (CONTRACT 2): each header's rule, the allow-list, and
/// the batch processor's routing; the bounded scan that finds the jobId of a message that is no job.
@Suite struct JobHeaderTests {
    static let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    static func headers(_ pairs: [(String, String)]) -> JobHeaders { JobHeaders(pairs.map { ($0.0, Array($0.1.utf8)) }) }

    @Test func validHeadersArePassedOnInOrder() {
        let job = Self.headers([
            ("tracestate", "vendor=abc,other=1"), ("correlation-id", "c-1"), ("traceparent", Self.parent),
            ("reply-to", "appattest.replies"), ("reply-partition", "3"), ("unrelated", "x"),
        ])
        #expect(job.reply == .topic("appattest.replies", partition: 3))
        #expect(job.passedOn.map(\.name) == ["correlation-id", "traceparent", "tracestate"])
        #expect(job.passedOn.map { String(decoding: $0.value, as: UTF8.self) } == ["c-1", Self.parent, "vendor=abc,other=1"])
        #expect(job.logFields.map(\.0) == ["correlationId", "traceparent"])
        #expect(Self.headers([("reply-to", "r")]).reply == .topic("r", partition: nil))
        #expect(Self.headers([]).reply == .none && Self.headers([]).passedOn.isEmpty)
    }

    @Test func aMalformedTraceparentIsNotPassedOnNorItsTracestate() {
        let broken = [
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // uppercase
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero parent id
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // forbidden version
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  // version 00 has no more fields
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",  // misplaced dash
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",  // short
            "", "00", String(repeating: "0", count: 600),
        ]
        for value in broken {
            let job = Self.headers([("traceparent", value), ("tracestate", "a=b")])
            #expect(job.traceparent == nil && job.tracestate == nil, "\(value)")
        }
        #expect(Self.headers([("tracestate", "a=b")]).tracestate == nil, "a tracestate alone is discarded")
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future"
        #expect(Self.headers([("traceparent", later)]).traceparent == later, "a later version may add fields")
        #expect(Self.headers([("traceparent", Self.parent), ("traceparent", Self.parent)]).traceparent == nil, "given twice")
    }

    @Test func correlationIdAndTracestateAreBounded() {
        let id = String(repeating: "c", count: JobHeaders.maxCorrelationIdBytes)
        #expect(Self.headers([("correlation-id", id)]).correlationId == Array(id.utf8))
        #expect(Self.headers([("correlation-id", id + "c")]).correlationId == nil)
        #expect(Self.headers([("correlation-id", "")]).correlationId == nil)
        #expect(JobHeaders([("correlation-id", [0xff, 0x00, 0x01])]).correlationId == [0xff, 0x00, 0x01], "opaque bytes")
        #expect(Self.headers([("correlation-id", "a"), ("correlation-id", "b")]).correlationId == nil)
        let state = String(repeating: "s", count: JobHeaders.maxTracestateBytes)
        #expect(Self.headers([("traceparent", Self.parent), ("tracestate", state)]).tracestate == state)
        #expect(Self.headers([("traceparent", Self.parent), ("tracestate", state + "s")]).tracestate == nil)
        #expect(Self.headers([("traceparent", Self.parent), ("tracestate", "a=\n")]).tracestate == nil)
    }

    @Test func replyToMustBeATopicNameAndItsPartitionADecimalInt32() {
        for name in ["", ".", "..", "has space", "slash/topic", "ü", String(repeating: "t", count: 250)] {
            #expect(Self.headers([("reply-to", name)]).reply == .malformed("reply-to is not a topic name"), "\(name)")
        }
        #expect(Self.headers([("reply-to", String(repeating: "t", count: 249))]).reply != .none)
        for partition in ["-1", "+1", "01", " 1", "1a", "", "2147483648", "99999999999"] {
            guard case .malformed = Self.headers([("reply-to", "r"), ("reply-partition", partition)]).reply else {
                Issue.record("reply-partition \(partition) was accepted")
                continue
            }
        }
        #expect(Self.headers([("reply-to", "r"), ("reply-partition", "2147483647")]).reply == .topic("r", partition: .max))
        #expect(Self.headers([("reply-to", "r"), ("reply-partition", "0")]).reply == .topic("r", partition: 0))
        #expect(Self.headers([("reply-partition", "1")]).reply == .none, "a partition alone asks for nothing")
        #expect(Self.headers([("reply-to", "a"), ("reply-to", "b")]).reply == .malformed("reply-to given more than once"))
    }

    @Test func theAllowListTakesExactNamesAndPrefixesAndNeverTheWorkersOwnTopics() throws {
        #expect(try ReplyTopics(parsing: "", reserved: []).isEmpty)
        #expect(!(try ReplyTopics(parsing: " ", reserved: [])).allows("anything"))
        let list = try ReplyTopics(parsing: "exact.topic, appattest.replies*", reserved: ["appattest.replies.jobs"])
        #expect(list.allows("exact.topic") && !list.allows("exact.topic2") && !list.allows("exact"))
        #expect(list.allows("appattest.replies") && list.allows("appattest.replies-host-7"))
        #expect(!list.allows("appattest.replie") && !list.allows("appattest.replies.jobs"))
        let all = try ReplyTopics(parsing: "*", reserved: ["appattest.jobs", "appattest.verdicts"])
        #expect(all.allows("x") && !all.allows("appattest.jobs") && !all.allows("appattest.verdicts"))
        for bad in ["a,,b", "a,", "bad topic", "a/b*", "**", ".", String(repeating: "t", count: 250)] {
            #expect(throws: ReplyTopics.Invalid.self, "\(bad)") { try ReplyTopics(parsing: bad, reserved: []) }
        }
    }
}

/// ATTEST_REPLY_TOPICS is validated at start like every setting; the worker's own topics are reserved.
@Suite struct ReplyTopicsSettingTests {
    let required = ["ATTEST_KAFKA_BROKERS": "127.0.0.1:9092", "ATTEST_DATABASE_URL": "postgresql://u@db/attest"]

    @Test func theSettingDefaultsToNoneAndRefusesWhatIsNoTopic() throws {
        let (none, _) = try WorkerConfiguration.load(file: nil, environment: required)
        #expect(none.replyTopics.isEmpty)
        let (set, _) = try WorkerConfiguration.load(
            file: nil, environment: required.merging(["ATTEST_REPLY_TOPICS": "appattest.replies*", "ATTEST_JOBS_TOPIC": "appattest.replies.jobs"]) { a, _ in a })
        #expect(set.replyTopics.allows("appattest.replies-1") && !set.replyTopics.allows("appattest.replies.jobs"))
        #expect(!set.replyTopics.allows("appattest.verdicts"))
        do {
            _ = try WorkerConfiguration.load(file: nil, environment: required.merging(["ATTEST_REPLY_TOPICS": "ok,not ok"]) { a, _ in a })
            Issue.record("a bad entry was accepted")
        } catch {
            #expect(error.problems.contains { $0.hasPrefix("ATTEST_REPLY_TOPICS: \"not ok\"") }, "\(error)")
        }
    }
}

@Suite struct JobFieldScanTests {
    static func scan(_ text: String) -> JobFieldScan { JobFieldScan(Array(text.utf8)) }

    @Test func theTopLevelMembersAreReadEvenFromACutPrefix() {
        let full = Self.scan(#"{"n":1.5e3,"ok":true,"x":[1,{"a":"]}"}],"jobId":"j\u00e9","teamId":"T","bundleId":"b","keyId":"k","pad":"aaa"#)
        #expect(full == JobFieldScan(jobId: "jé", teamId: "T", bundleId: "b", keyId: "k"))
        #expect(Self.scan(#" { "jobId" : "j" , "pad": "aaaa"#).jobId == "j")
        #expect(Self.scan(#"{"jobId":"unfinished"#).jobId == nil, "a string cut by the prefix is not a value")
        #expect(Self.scan(#"{"x":{"jobId":"inner"}}"#).jobId == nil, "only the top level counts")
        #expect(Self.scan(#"{"x":{"jobId":"inner"},"jobId":"outer"}"#).jobId == "outer")
        #expect(Self.scan(#"{"jobId":7}"#).jobId == nil && Self.scan(#"["jobId","j"]"#).jobId == nil)
        #expect(Self.scan(#"{"a" "jobId":"j"}"#).jobId == nil, "the scan stops where the shape breaks")
        #expect(Self.scan(#"{"jobId":"j","jobId":"k"}"#).jobId == nil, "a member named twice is ambiguous")
        #expect(Self.scan(#"{"jobId":"j","keyId":"a","keyId":"b"}"#) == JobFieldScan(jobId: "j"))
        let long = String(repeating: "i", count: JobFieldScan.maxValueBytes + 1)
        #expect(Self.scan(#"{"teamId":"\#(long)","jobId":"j"}"#) == JobFieldScan(jobId: "j"))
    }

    /// Deep nesting, huge strings and many members cost one pass: no recursion, and time grows with the
    /// bytes (four times the input takes well under the sixteen times a quadratic scan would).
    @Test func adversarialInputIsScannedInLinearTime() {
        let depth = 1 << 20
        let nested = Array(#"{"x":"#.utf8) + [UInt8](repeating: 0x5b, count: depth) + [UInt8](repeating: 0x5d, count: depth)
            + Array(#","jobId":"after-nesting"}"#.utf8)
        #expect(JobFieldScan(nested).jobId == "after-nesting")
        let string = Array(#"{"pad":""#.utf8) + [UInt8](repeating: 0x61, count: 4 << 20) + Array(#"","jobId":"after-string"}"#.utf8)
        #expect(JobFieldScan(string).jobId == "after-string")
        func members(_ count: Int) -> [UInt8] {
            Array(("{" + (0..<count).map { #""jobId":"\#($0)""# }.joined(separator: ",") + "}").utf8)
        }
        #expect(JobFieldScan(members(10_000)).jobId == nil)
        func seconds(_ bytes: [UInt8]) -> Double {
            let clock = ContinuousClock()
            let start = clock.now
            for _ in 0..<3 { _ = JobFieldScan(bytes) }
            let elapsed = clock.now - start
            return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        }
        func brackets(_ n: Int) -> [UInt8] { Array(#"{"x":"#.utf8) + [UInt8](repeating: 0x5b, count: n) }
        let small = seconds(brackets(1 << 19)), large = seconds(brackets(1 << 21))
        #expect(large < small * 10 + 0.05, "\(small) s for 512 Ki brackets, \(large) s for 2 Mi")
    }
}

extension BatchProcessorTests {
    func routingProcessor(_ metrics: WorkerMetrics, replyTopics: String = "replies*") throws -> BatchProcessor {
        BatchProcessor(
            verifier: JobVerifier(trust: Self.trust, clock: FixedClock(Timestamp(seconds: 1_777_000_000))), store: store,
            devices: DeviceCache(),
            settings: BatchProcessor.Settings(
                verdictsTopic: "verdicts", deadLetterTopic: "dead", maxMessageBytes: 64 * 1024,
                replyTopics: try ReplyTopics(parsing: replyTopics, reserved: ["verdicts", "dead", "jobs"])),
            metrics: metrics)
    }

    mutating func message(_ value: [UInt8], headers: [(String, String)], key: [UInt8]? = nil) -> KafkaMessage {
        offset += 1
        return KafkaMessage(
            topic: "jobs", partition: 0, offset: offset, key: key, value: value,
            headers: headers.map { ($0.0, Array($0.1.utf8)) }, timestampMs: nil)
    }

    /// An allowed reply-to gets the verdict twice, the same bytes and headers (jobId, then the valid ones
    /// passed on), the reply last in the chain and on the partition asked for; the verdicts topic always.
    @Test mutating func anAllowedReplyToGetsTheVerdictAfterTheVerdictsTopic() throws {
        let metrics = WorkerMetrics()
        let device = try Device()
        let out = try routingProcessor(metrics).process([message(Self.attestationJob(device, jobId: "route-1"), headers: [
            ("reply-to", "replies.a"), ("reply-partition", "2"), ("correlation-id", "corr-1"),
            ("traceparent", JobHeaderTests.parent), ("tracestate", "k=v"), ("other", "dropped"),
        ])])
        let verdict = try #require(out.first)
        #expect(verdict.topic == "verdicts" && verdict.partition == nil && verdict.kind.isVerdict)
        #expect(verdict.headers.map(\.name) == ["jobId", "correlation-id", "traceparent", "tracestate"])
        let reply = try #require(verdict.then.first)
        #expect(verdict.then.count == 1 && reply.then.isEmpty)
        #expect(reply.topic == "replies.a" && reply.partition == 2 && reply.key == verdict.key && reply.value == verdict.value)
        #expect(reply.headers.map(\.name) == verdict.headers.map(\.name) && reply.headers.map(\.value) == verdict.headers.map(\.value))
        #expect(reply.sourceOffset == verdict.sourceOffset && reply.source == verdict.source)
        #expect(JSONValue.parse(reply.value)?["ok"] == .bool(true))
    }

    /// A reply-to that is not allowed, malformed, or one of the worker's own topics gets no reply (counted
    /// by reason); the verdict still goes to the verdicts topic with its headers.
    @Test mutating func aRefusedReplyToGetsNoReplyButTheVerdict() throws {
        let metrics = WorkerMetrics()
        let processor = try routingProcessor(metrics)
        var jobs = [KafkaMessage]()
        for (n, reply) in [("elsewhere", "0"), ("jobs", "0"), ("replies.x", "-1"), ("bad name", "0")].enumerated() {
            jobs.append(message(Self.attestationJob(try Device(), jobId: "refused-route-\(n)"), headers: [
                ("reply-to", reply.0), ("reply-partition", reply.1), ("correlation-id", "c\(n)"),
            ]))
        }
        let out = try processor.process(jobs)
        #expect(out.allSatisfy { $0.topic == "verdicts" && $0.then.isEmpty })
        #expect(out.map { $0.headers.map(\.name) } == Array(repeating: ["jobId", "correlation-id"], count: 4))
        let text = metrics.registry.render()
        #expect(text.contains(#"attest_replies_refused_total{reason="not_allowed"} 2"#), "\(text)")
        #expect(text.contains(#"attest_replies_refused_total{reason="malformed"} 2"#))
    }

    /// Replies go to a bounded number of distinct topics, shared by the lanes: one topic more gets no reply
    /// (`too_many_topics`), the topics already used keep theirs.
    @Test mutating func aNewReplyTopicPastTheBoundGetsNoReply() throws {
        let metrics = WorkerMetrics()
        let processor = BatchProcessor(
            verifier: JobVerifier(trust: Self.trust, clock: FixedClock(Timestamp(seconds: 1_777_000_000))), store: store,
            devices: DeviceCache(),
            settings: BatchProcessor.Settings(
                verdictsTopic: "verdicts", deadLetterTopic: "dead", maxMessageBytes: 64 * 1024,
                replyTopics: try ReplyTopics(parsing: "replies*", reserved: ["verdicts", "dead", "jobs"]),
                replyTopicsInUse: ReplyTopicsInUse(limit: 2)),
            metrics: metrics)
        let lane = processor.sharing(store: store)
        var routed = [[String]]()
        for (n, topic) in ["replies.a", "replies.b", "replies.c", "replies.a"].enumerated() {
            let out = try (n % 2 == 0 ? processor : lane).process([
                message(Self.attestationJob(try Device(), jobId: "bound-\(n)"), headers: [("reply-to", topic)])
            ])
            routed.append(out[0].then.map { $0.topic })
        }
        #expect(routed == [["replies.a"], ["replies.b"], [], ["replies.a"]])
        #expect(metrics.registry.render().contains(#"attest_replies_refused_total{reason="too_many_topics"} 1"#))
    }

    /// Headers past what the consumer kept may repeat one it kept: then it counts as given twice.
    @Test func aHeaderSeenOnceAmongHeadersNotAllKeptCountsAsGivenTwice() {
        let headers: [(name: String, value: [UInt8])] = [("reply-to", Array("replies.a".utf8)), ("correlation-id", [0x63])]
        #expect(JobHeaders(headers).reply == .topic("replies.a", partition: nil))
        let cut = JobHeaders(headers, allKept: false)
        guard case .malformed = cut.reply else { Issue.record("\(cut.reply)"); return }
        #expect(cut.correlationId == nil)
        #expect(JobHeaders([("correlation-id", [0x63])], allKept: false).reply == .none)
    }

    /// The decision never depends on routing: a redelivery gets the stored verdict, byte for byte, routed by
    /// its own headers (another reply topic, another correlation id, or none).
    @Test mutating func aRedeliveryIsRoutedByItsOwnHeaders() throws {
        let processor = try routingProcessor(WorkerMetrics())
        let job = Self.attestationJob(try Device(), jobId: "route-again")
        let first = try processor.process([message(job, headers: [("reply-to", "replies.first"), ("correlation-id", "one")])])
        let again = try processor.process([message(job, headers: [("reply-to", "replies.second"), ("correlation-id", "two")])])
        let bare = try processor.process([message(job, headers: [])])
        #expect(again[0].value == first[0].value && bare[0].value == first[0].value)
        #expect(first[0].then.map(\.topic) == ["replies.first"] && again[0].then.map(\.topic) == ["replies.second"])
        #expect(again[0].headers.last.map { String(decoding: $0.value, as: UTF8.self) } == "two")
        #expect(bare[0].then.isEmpty && bare[0].headers.map(\.name) == ["jobId"])
    }

    /// A message over the size limit, or not JSON, whose jobId can still be read is dead-lettered with the
    /// jobId (header and envelope), then answered job_invalid with a reason of its own, under what it names,
    /// on the verdicts topic and its reply topic; nothing is stored. Without a readable jobId: the dead
    /// letter alone.
    @Test mutating func aMessageThatIsNoJobButNamesAJobIdIsAnswered() throws {
        let processor = try routingProcessor(WorkerMetrics())
        let oversize = Array(#"{"jobId":"big-1","teamId":"\#(Self.teamId)","bundleId":"b","keyId":"key-1","pad":""#.utf8)
            + [UInt8](repeating: 0x61, count: 70 * 1024) + Array(#""}"#.utf8)
        let broken = Array(#"{"jobId":"broken-1","kind":"assertion",}"#.utf8)
        let out = try processor.process([
            message(oversize, headers: [("reply-to", "replies.a"), ("correlation-id", "big")], key: [7]),
            message(broken, headers: [("correlation-id", "broken")]),
            message(Array(repeating: 0x61, count: 70 * 1024), headers: [("reply-to", "replies.a")]),
        ])
        #expect(out.map(\.topic) == ["dead", "dead", "dead"])
        #expect(out[0].headers.map(\.name) == ["jobId"] && out[0].headers[0].value == Array("big-1".utf8))
        #expect(JSONValue.parse(out[0].value)?["jobId"] == .string("big-1"))
        #expect(JSONValue.parse(out[0].value)?["reason"] == .string("too_large"))
        let verdict = try #require(out[0].then.first)
        #expect(verdict.topic == "verdicts" && verdict.key == Array("key-1".utf8))
        #expect(verdict.headers.map(\.name) == ["jobId", "correlation-id"])
        #expect(verdict.then.map(\.topic) == ["replies.a"])
        let json = try #require(JSONValue.parse(verdict.value))
        #expect(json["jobId"] == .string("big-1") && json["ok"] == .bool(false) && json["code"] == .string("job_invalid"))
        #expect(json["reason"] == .string("message_too_large"))
        #expect(json["teamId"] == .string(Self.teamId) && json["bundleId"] == .string("b") && json["keyId"] == .string("key-1"))
        let malformed = try #require(out[1].then.first.flatMap { JSONValue.parse($0.value) })
        #expect(malformed["jobId"] == .string("broken-1") && malformed["reason"] == .string("malformed_json"))
        #expect(out[1].then.first?.key == nil, "no keyId read and no message key")
        #expect(out[2].then.isEmpty && out[2].headers.isEmpty)
        #expect(!store.verdicts.keys.contains { $0.jobId == "big-1" || $0.jobId == "broken-1" })
    }
}

extension Outbound.Kind {
    var isVerdict: Bool { if case .verdict = self { true } else { false } }
}
