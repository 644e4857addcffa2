import AttestCore
import AttestCrypto
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import Foundation
import KafkaClient
import PostgresClient
import Testing
@testable import Worker

/// Outbound messages that always fit, keys that stay bounded, no traps on a record's metadata, and the
/// intake's bounds (issue 11 items 2, 3, 10).
@Suite struct OutboundTests {
    static let now = Timestamp(seconds: 1_777_000_000)

    static func record(
        key: [UInt8]? = nil, value: [UInt8], timestampMs: Int64? = 1_777_000_000_000, headers: [(name: String, value: [UInt8])] = []
    ) -> KafkaMessage {
        KafkaMessage(topic: "jobs", partition: 3, offset: 41, key: key, value: value, headers: headers, timestampMs: timestampMs)
    }

    static func bytes(_ count: Int, _ seed: Int = 1) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) } }

    /// Checks one envelope: within `maxBytes`, valid JSON, inlined bytes a prefix of the original, and the
    /// original's size and SHA-256 whenever less than all of it is inlined.
    static func expectEnvelope(_ json: [UInt8], of original: KafkaMessage, value: [UInt8], key: [UInt8]?, within maxBytes: Int) throws {
        #expect(json.count <= maxBytes, "\(json.count) > \(maxBytes)")
        let letter = try #require(JSONValue.parse(json))
        guard case .string(let valueText)? = letter["valueBase64"], let inlined = Base64.decode(valueText) else {
            Issue.record("no valueBase64")
            return
        }
        #expect(Array(value.prefix(inlined.count)) == inlined)
        if inlined.count < value.count {
            #expect(letter["truncated"] == .bool(true))
            #expect(letter["originalBytes"] == .int(Int64(value.count)))
            #expect(letter["originalSha256"] == .string(Hex.encode(Digest.sha256.hash(value))))
        } else {
            #expect(letter["truncated"] == nil)
        }
        guard let key else {
            #expect(letter["keyBase64"] == .null)
            return
        }
        guard case .string(let keyText)? = letter["keyBase64"], let inlinedKey = Base64.decode(keyText) else {
            Issue.record("no keyBase64")
            return
        }
        #expect(Array(key.prefix(inlinedKey.count)) == inlinedKey)
        if inlinedKey.count < key.count {
            #expect(letter["keyTruncated"] == .bool(true) && letter["originalKeyBytes"] == .int(Int64(key.count)))
            #expect(letter["originalKeySha256"] == .string(Hex.encode(Digest.sha256.hash(key))))
        }
    }

    @Test(arguments: [OutboundBudget.standard.bytes, OutboundBudget(producerLimit: 65_536)!.bytes, 3000, 700])
    func deadLettersStayWithinTheirBytesAtAndAroundTheLimits(maxBytes: Int) throws {
        // Values whose base64 is just under, at and over what is left, keys at and over their bound.
        let around = maxBytes / 4 * 3
        for valueCount in [0, around - 600, around - 1, around, around + 1, 2 * maxBytes] where valueCount >= 0 {
            for keyCount in [nil, 0, OutboundBudget.maxKeyBytes, OutboundBudget.maxKeyBytes + 1, 440_000] as [Int?] {
                let value = Self.bytes(valueCount)
                let key = keyCount.map { Self.bytes($0, 7) }
                let original = Self.record(key: key, value: value)
                let letter = DeadLetter(reason: .jobInvalid, message: "not a JSON object")
                try Self.expectEnvelope(
                    letter.json(for: original, at: Self.now, maxBytes: maxBytes), of: original, value: value, key: key,
                    within: max(maxBytes, 1200))
            }
        }
    }

    @Test func aValueThatFitsIsInlinedWholeAndTheSmallestEnvelopeInlinesNothing() throws {
        let value = Self.bytes(10_000)
        let original = Self.record(key: Self.bytes(20), value: value)
        let letter = DeadLetter(reason: .jobInvalid, message: "not a JSON object")
        let whole = try #require(JSONValue.parse(letter.json(for: original, at: Self.now, maxBytes: OutboundBudget.standard.bytes)))
        #expect(whole["valueBase64"] == .string(Base64.encode(value)) && whole["truncated"] == nil)
        let smallest = letter.smallestJSON(for: original, at: Self.now)
        #expect(smallest.count < 1200)
        try Self.expectEnvelope(smallest, of: original, value: value, key: original.key, within: 1200)
        #expect(JSONValue.parse(smallest)?["valueBase64"] == .string(""))
    }

    /// A value the consumer cut (its prefix and the whole one's size and digest) is described by those.
    @Test func aValueTheConsumerCutKeepsTheWholeOnesSizeAndDigest() throws {
        var original = Self.record(value: Self.bytes(100))
        original.valueBytes = 5_000_000
        original.valueSha256 = [UInt8](repeating: 0xab, count: 32)
        let letter = try #require(JSONValue.parse(
            DeadLetter(reason: .tooLarge, message: "m").json(for: original, at: Self.now, maxBytes: OutboundBudget.standard.bytes)))
        #expect(letter["valueBase64"] == .string(Base64.encode(Self.bytes(100))))
        #expect(letter["truncated"] == .bool(true) && letter["originalBytes"] == .int(5_000_000))
        #expect(letter["originalSha256"] == .string(String(repeating: "ab", count: 32)))
    }

    @Test(arguments: [
        Int64.max, Int64.min, 9_300_000_000_000_000, -9_300_000_000_000_000, -1, 0, 253_402_300_799_999, 253_402_300_800_000,
        -62_167_219_200_000, -62_167_219_200_001,
    ])
    func anyKafkaTimestampIsWrittenWithoutTrapping(milliseconds: Int64) throws {
        let json = DeadLetter(reason: .jobInvalid, message: "m").json(
            for: Self.record(value: [1], timestampMs: milliseconds), at: Self.now, maxBytes: 4000)
        let source = try #require(JSONValue.parse(json)?["source"])
        #expect(source["timestampMs"] == .int(milliseconds))
        let writable = (-62_167_219_200_000...253_402_300_799_999).contains(milliseconds)
        #expect((source["timestamp"] != nil) == writable)
        if case .string(let text)? = source["timestamp"] {
            #expect(Timestamp(rfc3339: text)?.microseconds == milliseconds * 1000)
        }
    }

    @Test func aRecordWithoutATimestampHasNone() throws {
        let json = DeadLetter(reason: .jobInvalid, message: "m").json(for: Self.record(value: [1], timestampMs: nil), at: Self.now, maxBytes: 4000)
        let source = try #require(JSONValue.parse(json)?["source"])
        #expect(source["timestamp"] == nil && source["timestampMs"] == nil)
    }

    @Test func aLongMessageTextIsCutOnACharacter() {
        let text = String(repeating: "é", count: 600)
        let letter = DeadLetter(reason: .jobInvalid, message: text)
        #expect(letter.message.utf8.count <= DeadLetter.maxMessageBytes && text.hasPrefix(letter.message))
        #expect(letter.message.count == 256)
    }

    @Test func outboundKeysAreTheKeyUpToTheirBoundElseItsDigest() {
        #expect(OutboundBudget.key(nil) == nil)
        #expect(OutboundBudget.key([]) == [])
        let bound = Self.bytes(OutboundBudget.maxKeyBytes)
        #expect(OutboundBudget.key(bound) == bound)
        let over = Self.bytes(OutboundBudget.maxKeyBytes + 1)
        #expect(OutboundBudget.key(over) == Digest.sha256.hash(over))
        #expect(OutboundBudget.key(Self.bytes(10), sha256: [9, 9]) == [9, 9], "the digest of the whole key the consumer cut")
    }

    @Test func theBudgetComesFromTheProducersLimitAndMeasuresEveryPart() {
        #expect(OutboundBudget(producerLimit: 65_535) == nil)
        #expect(OutboundBudget.standard.bytes == 1_000_000 - OutboundBudget.recordOverhead)
        #expect(OutboundBudget.size(key: [1, 2], value: [3], headers: [("jobId", [4, 5])]) == 2 + 1 + 5 + 2)
        #expect(OutboundBudget.standard.fits(key: nil, value: Self.bytes(OutboundBudget.standard.bytes), headers: []))
        #expect(!OutboundBudget.standard.fits(key: [1], value: Self.bytes(OutboundBudget.standard.bytes), headers: []))
    }

    @Test func recordsAreClassifiedBySizeJSONJobIdThenFields() {
        let classifier = RecordClassifier(maxMessageBytes: 1000)
        func reason(_ record: KafkaMessage) -> String {
            switch classifier.classify(record) {
            case .deadLetter(let letter): "dead:\(letter.reason.rawValue)"
            case .invalidJob(let jobId, _, let failure): "invalid:\(jobId):\(failure.reason.rawValue)"
            case .job(let job): "job:\(job.jobId)"
            }
        }
        var cut = Self.record(value: Array(#"{"jobId":"x"}"#.utf8))
        cut.valueSha256 = [0]
        cut.valueBytes = 999
        let longId = String(repeating: "i", count: RecordClassifier.maxJobIdBytes + 1)
        #expect(reason(Self.record(value: Self.bytes(1001))) == "dead:too_large")
        #expect(reason(cut) == "dead:too_large", "what the consumer cut is never parsed")
        #expect(reason(Self.record(value: [0xff, 0xfe])) == "dead:job_invalid")
        #expect(reason(Self.record(value: [])) == "dead:job_invalid")
        #expect(reason(Self.record(value: Array("[1]".utf8))) == "dead:job_invalid")
        #expect(reason(Self.record(value: Array(#"{"jobId":""}"#.utf8))) == "dead:job_invalid")
        #expect(reason(Self.record(value: Array(#"{"jobId":"\#(longId)"}"#.utf8))) == "dead:job_invalid")
        #expect(reason(Self.record(value: Array(#"{"jobId":"a\u0000b"}"#.utf8))) == "dead:job_invalid")
        #expect(reason(Self.record(value: Array(#"{"jobId":"j1","kind":"assertion"}"#.utf8))).hasPrefix("invalid:j1:"))
    }

    @Test func theIntakeIsBoundedInMessagesAndBytesToWithinOneRecord() {
        let bounds = IntakeBounds(maxMessages: 100, maxBytes: 10_000, maxRecordBytes: 1_000, batchSize: 10)
        #expect(bounds.isFull(messages: 100, bytes: 0) && bounds.isFull(messages: 0, bytes: 10_000))
        #expect(!bounds.isFull(messages: 99, bytes: 9_999))
        #expect(bounds.room(messages: 0, bytes: 0) == 10, "ten records of the largest size fill the bytes")
        #expect(bounds.room(messages: 95, bytes: 0) == 5)
        #expect(bounds.room(messages: 0, bytes: 9_500) == 1, "at least one, so the intake never stops")
        #expect(bounds.room(messages: 0, bytes: 10_000) == 0)
        for bytes in stride(from: 0, to: 10_000, by: 37) {
            #expect(bytes + bounds.room(messages: 0, bytes: bytes) * 1_000 <= 10_000 + 1_000)
        }
        #expect(bounds.resumes(messages: 50, bytes: 5_000) && !bounds.resumes(messages: 50, bytes: 5_001))
        #expect(bounds.wakes(messages: 90, bytes: 7_500) && !bounds.wakes(messages: 90, bytes: 7_501) && !bounds.wakes(messages: 91, bytes: 0))
    }

    @Test func theWorkersLimitsCopyAJobWholeAndBoundEverythingElse() {
        let limits = KafkaMessage.Limits.worker(maxMessageBytes: 262_144)
        #expect(limits.maxValueBytes == 262_144 && limits.maxKeyBytes == OutboundBudget.maxKeyBytes)
        #expect(limits.maxRetainedBytes < 1_000_000)
        let data = Self.bytes(300_000)
        let (kept, sha256) = data.withUnsafeBytes { limits.keep($0, limit: limits.maxValueBytes, prefix: limits.valuePrefixBytes) }
        #expect(kept == Array(data.prefix(limits.valuePrefixBytes)) && sha256 == Digest.sha256.hash(data))
        #expect(limits.valuePrefixBytes == 512 * 1024, "a dead letter shows the first 512 KiB of an oversize value")
    }

    @Test func anyStoredGracePeriodIsReadWithoutTrapping() {
        let quota = MonthlyQuota(devices: 5, limitReachedAt: Self.now)
        #expect(!quota.stopsNewDevices(at: Self.now.adding(seconds: 86_400 * 300), limit: 5, graceDays: Int(Int32.max)))
        #expect(quota.stopsNewDevices(at: Self.now.adding(seconds: 86_400 * 8), limit: 5, graceDays: 7))
        #expect(quota.stopsNewDevices(at: Self.now, limit: 5, graceDays: -3))
    }

    @Test func deliveriesAreRetriedDoublingUpToTheirCap() {
        var retry = OutboundPublisher.deliveryBackoff
        let waits = (0..<8).map { _ in retry.next() }
        #expect(waits == [100, 200, 400, 800, 1600, 3200, 5000, 5000].map(Duration.milliseconds))
    }
}

/// The batch processor's outbound messages: bounded keys, and replacements that fit.
@Suite struct BatchOutboundTests {
    var store = FakeStore()

    func processor() -> BatchProcessor {
        BatchProcessor(
            verifier: JobVerifier(trust: BatchProcessorTests.trust, clock: FixedClock(Timestamp(seconds: 1_777_000_000))), store: store,
            devices: DeviceCache(),
            settings: BatchProcessor.Settings(verdictsTopic: "verdicts", deadLetterTopic: "dead", maxMessageBytes: 256 * 1024))
    }

    /// The reproduced wedge: a 440,000-byte key and a non-JSON value. Its dead letter is keyed by the key's
    /// SHA-256 and fits; so do those of other key sizes and of a value at the size limit.
    @Test func deadLettersOfOversizeKeysFitAndAreKeyedByTheirDigest() throws {
        for (keyCount, valueCount) in [(440_000, 10), (1_025, 10), (999_000, 262_144), (440_000, 262_144), (10, 262_144)] {
            let key = OutboundTests.bytes(keyCount)
            let value = [0xff] + OutboundTests.bytes(valueCount - 1)
            let out = try processor().process([OutboundTests.record(key: key, value: value)])
            #expect(out[0].topic == "dead")
            #expect(out[0].key == OutboundBudget.key(key))
            #expect(OutboundBudget.standard.fits(key: out[0].key, value: out[0].value, headers: out[0].headers), "\(keyCount)/\(valueCount)")
            try OutboundTests.expectEnvelope(out[0].value, of: out[0].original, value: value, key: key, within: OutboundBudget.standard.bytes)
        }
    }

    @Test func aVerdictIsKeyedByABoundedKeyIdAndItsSmallestReplacementFits() throws {
        let keyId = String(repeating: "k", count: 5000)
        let job = Array(#"{"jobId":"big-key","kind":"assertion","teamId":"TEAMBATCH1","bundleId":"b","keyId":"\#(keyId)","assertion":"AA==","clientDataHash":"AA==","receivedAt":"2026-04-24T03:06:40Z"}"#.utf8)
        let p = processor()
        let out = try p.process([OutboundTests.record(key: Array(keyId.utf8), value: job)])
        #expect(out[0].topic == "verdicts" && out[0].key == Digest.sha256.hash(Array(keyId.utf8)))
        let replacement = p.smallestDeadLetter(replacing: out[0], error: "MSG_SIZE_TOO_LARGE")
        #expect(replacement.topic == "dead" && replacement.sourceOffset == out[0].sourceOffset && replacement.value.count < 1200)
        let letter = try #require(JSONValue.parse(replacement.value))
        #expect(letter["reason"] == .string("job_invalid") && letter["originalBytes"] == .int(Int64(job.count)))
        if case .smallestDeadLetter = replacement.kind {} else { Issue.record("not marked as the smallest") }
    }
}

/// Every numeric setting is range-checked at start: a value beyond it is a clear problem, never a trap later.
@Suite struct SettingRangeTests {
    let required = ["ATTEST_KAFKA_BROKERS": "127.0.0.1:9092", "ATTEST_DATABASE_URL": "postgresql://u@db/attest"]

    func problems(_ environment: [String: String]) -> String? {
        do {
            _ = try WorkerConfiguration.load(file: nil, environment: required.merging(environment) { _, b in b })
            return nil
        } catch {
            return error.description
        }
    }

    @Test(arguments: [
        ("ATTEST_MAX_JOB_AGE", "9223372036854775807"), ("ATTEST_MAX_JOB_AGE", "99999999999999999999999"),
        ("ATTEST_MAX_FUTURE_SKEW", "9223372036854775807"), ("ATTEST_MAX_FUTURE_SKEW", "-1"),
        ("ATTEST_MAX_MESSAGE_BYTES", "9223372036854775807"), ("ATTEST_WORKERS", "100000"), ("ATTEST_BATCH_SIZE", "9223372036854775807"),
        ("ATTEST_BATCH_LANES", "100000"), ("ATTEST_MAX_BUFFERED_MESSAGES", "9223372036854775807"),
        ("ATTEST_MAX_BUFFERED_BYTES", "10"), ("ATTEST_MAX_BUFFERED_BYTES", "9223372036854775807"),
        ("ATTEST_PAUSE_AFTER_MS", "9223372036854775807"), ("ATTEST_SHUTDOWN_TIMEOUT", "9223372036854775807"),
        ("ATTEST_CHALLENGES_PER_MINUTE", "9223372036854775807"), ("ATTEST_CHALLENGE_BURST", "0"),
    ])
    func outOfRangeValuesAreRefusedWithTheirName(name: String, value: String) {
        let text = problems([name: value])
        #expect(text?.contains(name) == true, "\(name)=\(value): \(text ?? "accepted")")
    }

    @Test func theProducersMessageLimitIsValidatedAndBoundsTheJobSize() throws {
        for properties in ["message.max.bytes=abc", "message.max.bytes=1000", "message.max.bytes=2000000000", "message.max.bytes=16777217"] {
            #expect(problems(["ATTEST_KAFKA_PROPERTIES": properties])?.contains("message.max.bytes") == true, "\(properties)")
        }
        #expect(problems(["ATTEST_MAX_MESSAGE_BYTES": "600000"])?.contains("ATTEST_MAX_MESSAGE_BYTES") == true, "over half of 1,000,000")
        #expect(problems(["ATTEST_MAX_MESSAGE_BYTES": "2000000", "ATTEST_MAX_BUFFERED_BYTES": "1048576",
            "ATTEST_KAFKA_PROPERTIES": "message.max.bytes=5000000"])?.contains("ATTEST_MAX_BUFFERED_BYTES") == true)
        let (configuration, _) = try WorkerConfiguration.load(
            file: nil, environment: required.merging(["ATTEST_KAFKA_PROPERTIES": "message.max.bytes=2000000", "ATTEST_MAX_MESSAGE_BYTES": "900000"]) { _, b in b })
        #expect(configuration.outboundBudget.producerLimit == 2_000_000 && configuration.maxMessageBytes == 900_000)
        let (defaults, _) = try WorkerConfiguration.load(file: nil, environment: required)
        #expect(defaults.outboundBudget == .standard && defaults.maxBufferedBytes == 134_217_728)
    }
}
