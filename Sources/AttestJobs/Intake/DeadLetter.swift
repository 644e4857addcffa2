import AttestCore
import AttestCrypto
import AttestVerifier
import KafkaRecords

/// A Kafka message that is not a job (too large, not JSON, no jobId), as published to the dead-letter topic
/// with the reason and as much of its original bytes as fits (Schemas/deadletter.schema.json). It gets no
/// verdict, unless its jobId could be read (``answer``): then a job_invalid verdict follows it, so the
/// backend that sent it is answered.
///
/// Whatever the original (a key or value of any size, a timestamp of any 64-bit value), the envelope stays
/// within the bytes it is given: key and value are inlined up to what is left after the fixed members, and
/// what is cut is described by its size and SHA-256.
public struct DeadLetter: Sendable {
    public enum Reason: String, Sendable {
        case tooLarge = "too_large"
        case jobInvalid = "job_invalid"
    }

    public let reason: Reason
    public let message: String
    /// Set for a message that is answered by a verdict as well: a job PostgreSQL refused to store, or one
    /// that is too large or not JSON but whose jobId could be read (a usable jobId: at most 256 bytes).
    public let jobId: String?
    /// For a message too large or not JSON whose jobId could be read: what it names and the rejection its
    /// verdict carries (published besides the dead letter, never stored).
    public let answer: (fields: JobFieldScan, failure: VerificationFailure)?

    /// `message` is cut to ``maxMessageBytes`` (it may quote an error from elsewhere).
    public init(reason: Reason, message: String, jobId: String? = nil) {
        self.reason = reason
        self.message = Self.prefix(message, bytes: Self.maxMessageBytes)
        self.jobId = jobId
        answer = nil
    }

    /// The dead letter of a message that is no job but names a usable jobId, answered with `failure`.
    public init(reason: Reason, message: String, answering fields: JobFieldScan, with failure: VerificationFailure) {
        self.reason = reason
        self.message = Self.prefix(message, bytes: Self.maxMessageBytes)
        jobId = fields.jobId
        answer = (fields, failure)
    }

    public static let maxMessageBytes = 512
    /// Of a key, at most this is inlined: the rest of a longer one is described by its size and digest.
    public static let maxInlineKeyBytes = OutboundBudget.maxKeyBytes
    /// Kafka timestamps that name a time RFC 3339 can write (years 0000 to 9999) are written as one.
    static let writableMilliseconds: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// The envelope for `original`, at most `maxBytes` long whenever `maxBytes` leaves room for the fixed
    /// members (else the smallest one): the key inlined up to ``maxInlineKeyBytes``, the value as far as the
    /// rest allows.
    public func json(for original: KafkaMessage, at now: Timestamp, maxBytes: Int) -> [UInt8] {
        let keyInline = min(original.key?.count ?? 0, Self.maxInlineKeyBytes)
        let room = maxBytes - envelope(original, now, keyInline: keyInline, valueInline: 0).count
        guard room >= 0 else { return smallestJSON(for: original, at: now) }
        return envelope(original, now, keyInline: keyInline, valueInline: min(original.value.count, room / 4 * 3))
    }

    /// The envelope with neither key nor value inlined (their sizes and digests only): what stands in for a
    /// message whose publication the broker refused.
    public func smallestJSON(for original: KafkaMessage, at now: Timestamp) -> [UInt8] {
        envelope(original, now, keyInline: 0, valueInline: 0)
    }

    /// The members in schema order; `truncated` and the original's size and digest whenever less than the
    /// whole value is inlined (likewise for the key), so the envelope with nothing inlined is the largest
    /// fixed part.
    private func envelope(_ original: KafkaMessage, _ now: Timestamp, keyInline: Int, valueInline: Int) -> [UInt8] {
        var source: [(String, JSONValue)] = [
            ("topic", .string(original.topic)), ("partition", .int(Int64(original.partition))),
            ("offset", .int(original.offset)),
        ]
        if let milliseconds = original.timestampMs {
            if Self.writableMilliseconds.contains(milliseconds) {
                source.append(("timestamp", .string(Timestamp(microseconds: milliseconds * 1000).rfc3339)))
            }
            source.append(("timestampMs", .int(milliseconds)))
        }
        var members: [(String, JSONValue)] = [
            ("reason", .string(reason.rawValue)), ("message", .string(message)), ("source", .object(source)),
            ("keyBase64", original.key.map { .string(Base64.encode($0.prefix(keyInline))) } ?? .null),
            ("valueBase64", .string(Base64.encode(original.value.prefix(valueInline)))),
            ("deadLetteredAt", .string(now.rfc3339)),
        ]
        if let jobId { members.append(("jobId", .string(jobId))) }
        if valueInline < original.valueBytes {
            members += [
                ("truncated", .bool(true)), ("originalBytes", .int(Int64(original.valueBytes))),
                ("originalSha256", .string(Hex.encode(original.valueSha256 ?? Digest.sha256.hash(original.value)))),
            ]
        }
        if let key = original.key, keyInline < original.keyBytes {
            members += [
                ("keyTruncated", .bool(true)), ("originalKeyBytes", .int(Int64(original.keyBytes))),
                ("originalKeySha256", .string(Hex.encode(original.keySha256 ?? Digest.sha256.hash(key)))),
            ]
        }
        if original.headerCount > 0 { members.append(("headerCount", .int(Int64(original.headerCount)))) }
        return Array(JSONValue.object(members).serialized().utf8)
    }

    /// The longest prefix of `text` of at most `bytes` UTF-8 bytes that ends on a character.
    static func prefix(_ text: String, bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var end = text.startIndex
        var used = 0
        for index in text.indices {
            let next = text.index(after: index)
            used += text.utf8.distance(from: index, to: next)
            guard used <= bytes else { break }
            end = next
        }
        return String(text[..<end])
    }
}
