import Foundation
import KafkaClient
import Synchronization
import Testing

/// What the consumer copies of hostile records (issue 11 item 10), and which produce errors refuse the
/// message itself (item 2).
@Suite struct MessageLimitsTests {
    /// A stand-in digest that depends on every byte and the length, so a digest of the prefix differs.
    static let checksum: @Sendable (UnsafeRawBufferPointer) -> [UInt8] = { buffer in
        var sum: UInt64 = 0
        for byte in buffer { sum = sum &* 31 &+ UInt64(byte) }
        return withUnsafeBytes(of: sum) { Array($0) } + withUnsafeBytes(of: UInt64(buffer.count)) { Array($0) }
    }

    static let limits = KafkaMessage.Limits(
        maxValueBytes: 1000, valuePrefixBytes: 100, maxKeyBytes: 64, maxHeaders: 3, maxHeaderBytes: 50, sha256: checksum)

    @Test func bytesUpToTheLimitAreKeptWholeAndLongerOnesAsAPrefixWithTheWholeDigest() {
        for (count, kept, digested) in [(0, 0, false), (999, 999, false), (1000, 1000, false), (1001, 100, true), (50_000, 100, true)] {
            let data = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 7) }
            let (bytes, sha256) = data.withUnsafeBytes { Self.limits.keep($0, limit: 1000, prefix: 100) }
            #expect(bytes.count == kept && bytes == Array(data.prefix(kept)), "\(count)")
            #expect((sha256 != nil) == digested, "\(count)")
            if let sha256 { #expect(sha256 == data.withUnsafeBytes { Self.checksum($0) }) }
        }
    }

    @Test func headersAreKeptWhileBothBoundsHold() {
        #expect(Self.limits.headerBytes(adding: 50, to: 0, kept: 0) == 50)
        #expect(Self.limits.headerBytes(adding: 51, to: 0, kept: 0) == nil)
        #expect(Self.limits.headerBytes(adding: 10, to: 40, kept: 2) == 50)
        #expect(Self.limits.headerBytes(adding: 1, to: 10, kept: 3) == nil, "a fourth header")
        #expect(Self.limits.headerBytes(adding: .max, to: 1, kept: 0) == nil, "overflow")
        #expect(Self.limits.headerBytes(adding: -1, to: 0, kept: 0) == nil)
    }

    @Test func retainedBytesCountWhatIsHeldAndTheLimitsBoundIt() {
        let small = KafkaMessage(topic: "t", partition: 0, offset: 0, key: nil, value: [], headers: [], timestampMs: nil)
        let large = KafkaMessage(
            topic: "t", partition: 0, offset: 0, key: [UInt8](repeating: 1, count: 64), value: [UInt8](repeating: 2, count: 1000),
            headers: [("a", [UInt8](repeating: 3, count: 20)), ("b", [UInt8](repeating: 4, count: 28))], timestampMs: nil)
        #expect(large.retainedBytes - small.retainedBytes >= 64 + 1000 + 50)
        #expect(large.retainedBytes <= Self.limits.maxRetainedBytes)
        #expect(KafkaMessage.Limits.unlimited.maxRetainedBytes == .max, "saturates instead of trapping")
        #expect(large.valueBytes == 1000 && large.keyBytes == 64 && large.headerCount == 2 && large.valueSha256 == nil)
    }

    /// Through a real librdkafka consumer (mock cluster): a record with an oversize key and value and too
    /// many headers arrives cut to the limits, with the sizes and digests of the whole; a small one whole.
    @Test func theConsumerCopiesOnlyWhatTheLimitsKeep() async throws {
        let key = (0..<5000).map { UInt8(truncatingIfNeeded: $0) }
        let value = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let headers = (0..<10).map { (name: "h\($0)", value: [UInt8](repeating: UInt8($0), count: 20)) }
        let received = try await onOwnThread { () throws -> [KafkaMessage] in
            let cluster = try KafkaMockCluster()
            let topic = uniqueName("limits")
            let producer = try KafkaProducer(properties: producerProperties(cluster.bootstrapServers))
            _ = try produceAll(producer, topic: topic, [
                (key: key, value: value, headers: headers), (key: bytes("k"), value: bytes("small"), headers: [(name: "x", value: [1])]),
            ])
            producer.close(timeoutMs: 5_000)
            let consumer = try KafkaConsumer(
                properties: consumerProperties(cluster.bootstrapServers, group: uniqueName("g")), topics: [topic], delegate: nil,
                limits: Self.limits)
            let received = try poll(consumer, for: "2 messages") { $0.count >= 2 }
            consumer.close()
            return withExtendedLifetime(cluster) { received }
        }
        let big = try #require(received.first { $0.valueBytes == value.count })
        #expect(big.value == Array(value.prefix(100)))
        #expect(big.valueSha256 == value.withUnsafeBytes { Self.checksum($0) })
        #expect(big.key == Array(key.prefix(64)) && big.keyBytes == 5000)
        #expect(big.keySha256 == key.withUnsafeBytes { Self.checksum($0) })
        #expect(big.headerCount == 10)
        #expect(big.headers.map(\.name) == ["h0", "h1"], "two headers of 22 bytes fit in 50, the third would not")
        let small = try #require(received.first { $0.value == bytes("small") })
        #expect(small.key == bytes("k") && small.keySha256 == nil && small.valueSha256 == nil && small.headers.count == 1)
    }

    @Test func errorsThatRefuseTheMessageItselfAreToldApartFromTransientOnes() {
        for code in [KafkaError.Code.messageTooLarge, KafkaError.Code.invalidRecord, 4, 2, 18, -199] {
            #expect(KafkaError(code: code).rejectsMessage, "\(KafkaError(code: code).name)")
        }
        for code in [KafkaError.Code.queueFull, KafkaError.Code.messageTimedOut, KafkaError.Code.timedOut, KafkaError.Code.state,
            KafkaError.Code.purgedQueue, 6 /* NOT_LEADER */, -195 /* _TRANSPORT */]
        {
            #expect(!KafkaError(code: code).rejectsMessage, "\(KafkaError(code: code).name)")
        }
    }

    /// librdkafka's own check: a message over the producer's message.max.bytes is refused at once, with the
    /// code a publisher must not retry.
    @Test func aMessageOverTheProducersLimitIsRefusedForGood() async throws {
        let error = try await onOwnThread { () throws -> KafkaError? in
            let cluster = try KafkaMockCluster()
            var properties = producerProperties(cluster.bootstrapServers)
            properties["message.max.bytes"] = "100000"
            let producer = try KafkaProducer(properties: properties)
            defer { producer.close(timeoutMs: 1_000) }
            do {
                try producer.produce(topic: uniqueName("big"), key: [UInt8](repeating: 1, count: 60_000),
                    value: [UInt8](repeating: 2, count: 60_000), headers: []) { _ in }
                return withExtendedLifetime(cluster) { nil }
            } catch let error as KafkaError {
                return error
            }
        }
        let refused = try #require(error, "the oversize message was queued")
        #expect(refused.rejectsMessage && refused.code == KafkaError.Code.messageTooLarge)
    }
}
