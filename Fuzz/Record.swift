import AttestCore
import AttestCrypto
import AttestJobs
import KafkaRecords

/// A whole Kafka record from a hostile producer (key, headers, timestamp, partition, offset, value), cut as
/// the worker's consumer cuts it, through `RecordClassifier` and the outbound message it leaves with.
/// Asserts the invariants: nothing traps, every record is classified, every dead letter and verdict fits
/// the producer's limit, outbound keys stay bounded, the smallest dead letter is small.
///
/// Input layout (little-endian): flags (bit 0 timestamp present, bit 1 key present, bits 2-3 the producer
/// limit: 1,000,000, 65,536, 200,000 or 70,000), timestamp Int64, partition Int32, offset Int64, key length
/// UInt16 and a repeat count (the key is its bytes repeated 1 to 16 times, so keys reach megabytes), header
/// count, then per header a name length (1 byte), value length (UInt16) and the bytes; the rest is the value.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecord(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = Reader(bytes: fuzzInput(data, size))
    let flags = input.byte()
    let timestamp = input.int64()
    let partition = Int32(truncatingIfNeeded: input.int64() & 0xffff_ffff)
    let offset = input.int64()
    let keyPart = input.take(Int(input.byte()) | Int(input.byte()) << 8)
    let key = Array([[UInt8]](repeating: keyPart, count: Int(input.byte() & 15) + 1).joined())
    var headers: [(name: String, value: [UInt8])] = []
    for _ in 0..<input.byte() {
        let nameLength = Int(input.byte())
        let valueLength = Int(input.byte()) | Int(input.byte()) << 8
        headers.append((String(decoding: input.take(nameLength), as: UTF8.self), input.take(valueLength)))
    }
    let value = input.rest()
    let producerLimit = [1_000_000, 65_536, 200_000, 70_000][Int(flags >> 2 & 3)]
    let budget = OutboundBudget(producerLimit: producerLimit)!

    let record = consumed(
        partition: partition, offset: offset, key: flags & 2 != 0 ? key : nil, value: value, headers: headers,
        timestampMs: flags & 1 != 0 ? timestamp : nil)
    let now = Timestamp(seconds: 1_777_000_000)
    switch RecordClassifier(maxMessageBytes: limits.maxValueBytes).classify(record) {
    case .deadLetter(let letter):
        let outboundKey = OutboundBudget.key(record.key, sha256: record.keySha256)
        precondition((outboundKey?.count ?? 0) <= OutboundBudget.maxKeyBytes, "dead letter key over its bound")
        let room = budget.bytes - (outboundKey?.count ?? 0)
        let json = letter.json(for: record, at: now, maxBytes: room)
        precondition(budget.fits(key: outboundKey, value: json, headers: []), "dead letter over the producer's limit")
        precondition(JSONValue.parse(json)?["reason"] == .string(letter.reason.rawValue), "dead letter is not its JSON")
        let smallest = letter.smallestJSON(for: record, at: now)
        precondition(smallest.count <= 2048 && JSONValue.parse(smallest) != nil, "the smallest dead letter is not small")
    case .invalidJob(let jobId, _, let failure):
        var verdict = Verdict(job: nil, verifiedAt: now)
        verdict.jobId = jobId
        verdict.failure = failure
        expectFits(verdict, key: OutboundBudget.key(record.key, sha256: record.keySha256), jobId: jobId, budget)
    case .job(let job):
        expectFits(Verdict(job: job, verifiedAt: now), key: OutboundBudget.key(Array(job.keyId.utf8)), jobId: job.jobId, budget)
    }
    return 0
}

/// The worker's consumer limits at a small ATTEST_MAX_MESSAGE_BYTES, so that inputs cross every bound.
private let limits = KafkaMessage.Limits(
    maxValueBytes: 4096, valuePrefixBytes: 1024, maxKeyBytes: OutboundBudget.maxKeyBytes, maxHeaders: 8, maxHeaderBytes: 512,
    sha256: { Digest.sha256.hash($0) })

/// The record as the consumer would hand it over: value and key cut with their digests, headers bounded.
private func consumed(
    partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8], headers: [(name: String, value: [UInt8])], timestampMs: Int64?
) -> KafkaMessage {
    let keptValue = value.withUnsafeBytes { limits.keep($0, limit: limits.maxValueBytes, prefix: limits.valuePrefixBytes) }
    let keptKey = key.map { key in key.withUnsafeBytes { limits.keep($0, limit: limits.maxKeyBytes, prefix: limits.maxKeyBytes) } }
    var kept: [(name: String, value: [UInt8])] = []
    var bytes = 0
    for header in headers {
        guard let total = limits.headerBytes(adding: header.name.utf8.count + header.value.count, to: bytes, kept: kept.count) else { break }
        bytes = total
        kept.append(header)
    }
    var record = KafkaMessage(
        topic: "appattest.jobs", partition: partition, offset: offset, key: keptKey?.bytes, value: keptValue.bytes, headers: kept,
        timestampMs: timestampMs)
    record.keyBytes = key?.count ?? 0
    record.keySha256 = keptKey?.sha256
    record.valueBytes = value.count
    record.valueSha256 = keptValue.sha256
    record.headerCount = headers.count
    return record
}

/// A verdict with its bounded key and jobId header fits: jobs are at most half the producer's limit.
private func expectFits(_ verdict: Verdict, key: [UInt8]?, jobId: String, _ budget: OutboundBudget) {
    precondition((key?.count ?? 0) <= OutboundBudget.maxKeyBytes, "verdict key over its bound")
    let value = Array(verdict.json.serialized().utf8)
    precondition(budget.fits(key: key, value: value, headers: [("jobId", Array(jobId.utf8))]), "verdict over the producer's limit")
}

/// Reads the input front to back; past its end every read gives zeros or nothing.
private struct Reader {
    let bytes: [UInt8]
    var index = 0

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func int64() -> Int64 {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 8) { value |= UInt64(byte()) << UInt64(shift) }
        return Int64(bitPattern: value)
    }

    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, index + count)
        defer { index = end }
        return Array(bytes[index..<end])
    }

    mutating func rest() -> [UInt8] { take(bytes.count - index) }
}
