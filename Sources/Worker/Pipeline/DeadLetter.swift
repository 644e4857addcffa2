import AttestCore
import AttestCrypto
import AttestJobs
import KafkaClient

/// A Kafka message that is not a job (too large, not JSON, no jobId), as published to the dead-letter topic
/// with the reason and its original bytes (Schemas/deadletter.schema.json). It gets no verdict.
struct DeadLetter {
    enum Reason: String {
        case tooLarge = "too_large"
        case jobInvalid = "job_invalid"
    }

    let reason: Reason
    let message: String
    /// Set for a job PostgreSQL refused to store, which is answered by a verdict as well.
    var jobId: String? = nil

    /// Originals above this are cut to it (with their size and SHA-256), so that the dead letter itself
    /// stays under the broker's default 1 MB message limit once base64-encoded.
    static let maxInlineBytes = 512 * 1024

    func json(for original: KafkaMessage, at now: Timestamp) -> String {
        var source: [(String, JSONValue)] = [
            ("topic", .string(original.topic)), ("partition", .int(Int64(original.partition))),
            ("offset", .int(original.offset)),
        ]
        if let timestamp = original.timestampMs {
            source.append(("timestamp", .string(Timestamp(microseconds: timestamp * 1000).rfc3339)))
        }
        var members: [(String, JSONValue)] = [
            ("reason", .string(reason.rawValue)), ("message", .string(message)), ("source", .object(source)),
            ("keyBase64", original.key.map { .string(Base64.encode($0.prefix(Self.maxInlineBytes))) } ?? .null),
            ("valueBase64", .string(Base64.encode(original.value.prefix(Self.maxInlineBytes)))),
            ("deadLetteredAt", .string(now.rfc3339)),
        ]
        if let jobId { members.append(("jobId", .string(jobId))) }
        if original.value.count > Self.maxInlineBytes {
            members += [
                ("truncated", .bool(true)), ("originalBytes", .int(Int64(original.value.count))),
                ("originalSha256", .string(Hex.encode(Digest.sha256.hash(original.value)))),
            ]
        }
        return JSONValue.object(members).serialized()
    }
}
