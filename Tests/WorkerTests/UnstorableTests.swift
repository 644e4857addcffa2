import AttestCore
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Store
import Testing
import Worker

extension BatchProcessorTests {
    static let refused = PGError(code: .server, sqlState: "23514", message: "new row violates check constraint")

    /// A job PostgreSQL refuses is answered: its dead letter (with the jobId header) is published first and
    /// carries the job_invalid/unstorable verdict to publish next, keyed by keyId like any verdict, so the
    /// offset finishes only once both are acknowledged. Nothing is stored.
    @Test mutating func anUnstorableJobGetsADeadLetterThenAnUnstorableVerdict() throws {
        let device = try Device()
        let job = message(Self.attestationJob(device, jobId: "refused-1"), key: [9])
        let out = processor().unstorable(job, Self.refused)
        #expect(out.topic == "dead" && out.sourceOffset == job.offset)
        #expect(out.headers.map(\.name) == ["jobId"] && out.headers[0].value == Array("refused-1".utf8))
        let letter = try #require(JSONValue.parse(out.value))
        #expect(letter["reason"] == .string("job_invalid"))
        #expect(letter["message"] == .string("could not be stored: integrity violation (23514)"))
        #expect(letter["jobId"] == .string("refused-1"))
        let verdict = try #require(out.then.first)
        #expect(out.then.count == 1 && verdict.then.isEmpty)
        #expect(verdict.topic == "verdicts" && verdict.source == job.topicPartition && verdict.sourceOffset == job.offset)
        #expect(verdict.key == Array(Base64.encode(device.keyId).utf8))
        #expect(verdict.headers.map(\.name) == ["jobId"] && verdict.headers[0].value == Array("refused-1".utf8))
        let json = try #require(JSONValue.parse(verdict.value))
        #expect(json["jobId"] == .string("refused-1") && json["ok"] == .bool(false))
        #expect(json["code"] == .string("job_invalid") && json["reason"] == .string("unstorable"))
        #expect(!store.verdicts.keys.contains { $0.jobId == "refused-1" })
    }

    /// A job with unusable fields gets the same pair; a message that is no job (nothing of it is stored, so
    /// it cannot be refused, but the answer must still be whole) gets the dead letter alone.
    @Test mutating func unstorableInvalidJobsAndNonJobs() throws {
        let invalid = processor().unstorable(message(Array(#"{"jobId":"refused-2","kind":"assertion","teamId":7}"#.utf8)), Self.refused)
        let verdict = try #require(invalid.then.first.flatMap { JSONValue.parse($0.value) })
        #expect(verdict["jobId"] == .string("refused-2") && verdict["reason"] == .string("unstorable"))
        let garbage = processor().unstorable(message([0xff, 0x00]), Self.refused)
        #expect(garbage.topic == "dead" && garbage.then.isEmpty && garbage.headers.isEmpty)
        #expect(JSONValue.parse(garbage.value)?["jobId"] == nil)
    }
}
