import Foundation
import KafkaClient
import Synchronization

/// Runs blocking Kafka calls (polls, flushes, group joins) on a thread of their own, so that tests running
/// in parallel do not hold the cooperative pool's few threads. Assertions stay in the calling test (the
/// body returns what it observed): an issue recorded on a bare thread would belong to no test.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try body() })
        }
    }
}

/// A failure of a test scenario that is not a KafkaError (a bounded wait ran out).
struct ScenarioError: Error, CustomStringConvertible {
    let description: String
}

/// Settings that make group joins and fetches quick. The mock cluster waits up to
/// `session.timeout.ms` - 1 s for the members of a rebalance, hence the short session by default.
func consumerProperties(
    _ bootstrap: String, group: String, autoCommit: Bool = false, sessionTimeoutMs: Int = 3000
) -> [String: String] {
    [
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": "\(sessionTimeoutMs)",
        "heartbeat.interval.ms": "500",
        "max.poll.interval.ms": "30000",
        "fetch.wait.max.ms": "50",
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "range",
        "enable.auto.commit": autoCommit ? "true" : "false",
        "enable.metrics.push": "false",
    ]
}

func producerProperties(_ bootstrap: String) -> [String: String] {
    ["bootstrap.servers": bootstrap, "linger.ms": "1", "enable.metrics.push": "false"]
}

func uniqueName(_ prefix: String) -> String {
    "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
}

/// Collects what the error handlers report, for the failure message of a test.
final class ErrorLog: Sendable {
    private let errors = Mutex<[KafkaError]>([])

    var handler: @Sendable (KafkaError) -> Void {
        { [self] error in errors.withLock { $0.append(error) } }
    }

    var all: [KafkaError] { errors.withLock { $0 } }
}

/// Records the delegate's calls in order; `onRevoke` runs inside partitionsRevoked (to store final offsets).
final class RebalanceRecorder: KafkaRebalanceDelegate {
    enum Event: Equatable, Sendable {
        case assigned(Set<TopicPartition>)
        case revoked(Set<TopicPartition>)
    }

    private let recorded = Mutex<[Event]>([])
    let onRevoke = Mutex<(@Sendable ([TopicPartition]) -> Void)?>(nil)

    var events: [Event] { recorded.withLock { $0 } }

    func partitionsAssigned(_ partitions: [TopicPartition]) {
        recorded.withLock { $0.append(.assigned(Set(partitions))) }
    }

    func partitionsRevoked(_ partitions: [TopicPartition]) {
        recorded.withLock { $0.append(.revoked(Set(partitions))) }
        onRevoke.withLock { $0 }?(partitions)
    }
}

/// Polls until `done` holds for everything received so far, or fails after `seconds`.
func poll(
    _ consumer: KafkaConsumer, for what: String, seconds: Double = 30, max: Int = 100,
    until done: ([KafkaMessage]) -> Bool
) throws -> [KafkaMessage] {
    let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int(seconds * 1000)))
    var received: [KafkaMessage] = []
    while !done(received) {
        guard ContinuousClock.now < deadline else {
            throw ScenarioError(description: "timed out after \(seconds) s waiting for \(what) (got \(received.count) messages)")
        }
        received += consumer.poll(max: max, timeoutMs: 100)
    }
    return received
}

/// Produces each message and waits until every completion has run; returns their results in order.
func produceAll(
    _ producer: KafkaProducer, topic: String,
    _ messages: [(key: [UInt8]?, value: [UInt8], headers: [(name: String, value: [UInt8])])]
) throws -> [Result<(partition: Int32, offset: Int64), KafkaError>] {
    let results = Mutex<[Int: [Result<(partition: Int32, offset: Int64), KafkaError>]]>([:])
    for (index, message) in messages.enumerated() {
        try producer.produce(topic: topic, key: message.key, value: message.value, headers: message.headers) { result in
            results.withLock { $0[index, default: []].append(result) }
        }
    }
    guard producer.flush(timeoutMs: 20_000) else { throw ScenarioError(description: "flush timed out") }
    return try results.withLock { results in
        try messages.indices.map { index in
            guard let calls = results[index], calls.count == 1 else {
                throw ScenarioError(description: "completion \(index) ran \(results[index]?.count ?? 0) times")
            }
            return calls[0]
        }
    }
}

extension Result {
    var acknowledgement: Success? { try? get() }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
