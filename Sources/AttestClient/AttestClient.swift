import AttestCore
import AttestJobs
import AttestVerifier
import Durations
import KafkaClient
import Synchronization

/// A backend's side of the round trip (CONTRACT 2, "Headers and replies"): publishes jobs to the worker's
/// jobs topic, keyed by keyId, each with `reply-to` = this client's reply topic and a fresh
/// `correlation-id`, and hands back each job's verdict as it arrives there, matched by correlation id (and
/// jobId), so the caller never reads the verdicts topic.
///
/// The reply topic is read from its end on every partition, assigned without a consumer group (no join or
/// rebalance delays the first verdict) and started in `init`, before the first publish, so no verdict is
/// missed. Many clients may share one reply topic: each ignores the replies it did not ask for. The worker
/// must allow the topic (ATTEST_REPLY_TOPICS). One thread at a time.
public final class AttestClient {
    public let jobsTopic: String
    public let replyTopic: String
    private let producer: KafkaProducer
    private let reader: KafkaTailReader
    /// correlation-id → the job waiting for it.
    private var pending: [[UInt8]: Submitted] = [:]
    private let deliveryFailures = DeliveryFailures()

    /// A published job awaiting its verdict.
    public struct Submitted: Sendable, Hashable {
        public let jobId: String
        public let correlationId: String
    }

    /// A job's verdict as the worker published it.
    public struct Answer: Sendable {
        public let submitted: Submitted
        /// The verdict JSON, byte for byte (Schemas/verdict.schema.json).
        public let value: [UInt8]
        public let verdict: JSONValue
        public var ok: Bool { verdict["ok"] == .bool(true) }
    }

    public enum Failure: Error, CustomStringConvertible {
        /// The line is no job the worker could answer: not a JSON object with a usable jobId.
        case notAJob(String)
        case kafka(KafkaError)
        /// The deadline passed first; these jobs are still unanswered.
        case timedOut([Submitted])

        public var description: String {
            switch self {
            case .notAJob(let why): "not a job: \(why)"
            case .kafka(let error): error.description
            case .timedOut(let jobs): "timed out with \(jobs.count) job(s) unanswered"
            }
        }
    }

    /// - Parameters:
    ///   - producerProperties: librdkafka settings for publishing (bootstrap.servers, security, …).
    ///   - consumerProperties: the same for reading the reply topic, which must exist.
    public init(
        producerProperties: [String: String], consumerProperties: [String: String], jobsTopic: String, replyTopic: String
    ) throws(Failure) {
        self.jobsTopic = jobsTopic
        self.replyTopic = replyTopic
        do {
            reader = try KafkaTailReader(properties: consumerProperties, topic: replyTopic)
            producer = try KafkaProducer(properties: producerProperties)
        } catch {
            throw .kafka(error)
        }
    }

    deinit {
        producer.close(timeoutMs: 5_000)
        reader.close()
    }

    /// Jobs published and not answered yet.
    public var outstanding: [Submitted] { Array(pending.values) }

    /// Publishes one job (its JSON, unchanged) keyed by its keyId (an Android attestation's: its leaf key's, the
    /// keyId the worker will report, so a key's jobs share a partition), with `reply-to`, a fresh `correlation-id`
    /// and `traceparent` when given. The job must be a JSON object with a usable jobId (1 to 256 bytes, no
    /// NUL), since only such a job is answered; its other fields are the worker's to judge.
    @discardableResult
    public func publish(_ job: [UInt8], traceparent: String? = nil) throws(Failure) -> Submitted {
        guard let json = JSONValue.parse(job), case .object = json else { throw .notAJob("not a JSON object") }
        guard case .string(let jobId)? = json["jobId"], !jobId.isEmpty, jobId.utf8.count <= RecordClassifier.maxJobIdBytes,
            !jobId.utf8.contains(0)
        else { throw .notAJob("no usable jobId (a string of 1 to \(RecordClassifier.maxJobIdBytes) bytes)") }
        var key = json["keyId"]?.stringValue.map { Array($0.utf8) }
        if key == nil, json["kind"] == .string(Job.Kind.androidAttestation.rawValue), case .success(let android) = AndroidJob.parse(json),
            case .attestation(let request) = android.payload, let leaf = request.leafKeyId
        {
            key = Array(Base64.encode(leaf).utf8)
        }
        let correlation = Self.freshCorrelationId()
        var headers: [(name: String, value: [UInt8])] = [
            (JobHeaders.replyTo, Array(replyTopic.utf8)), (JobHeaders.correlationId, Array(correlation.utf8)),
        ]
        if let traceparent { headers.append((JobHeaders.traceparent, Array(traceparent.utf8))) }
        let failures = deliveryFailures
        while true {
            do {
                try producer.produce(topic: jobsTopic, key: key, value: job, headers: headers) { result in
                    if case .failure(let error) = result { failures.record(error) }
                }
                break
            } catch where error.code == KafkaError.Code.queueFull {
                _ = producer.flush(timeoutMs: 100)
            } catch {
                throw .kafka(error)
            }
        }
        let submitted = Submitted(jobId: jobId, correlationId: correlation)
        pending[Array(correlation.utf8)] = submitted
        return submitted
    }

    /// The verdicts that arrive for published jobs until `deadline`, returned as soon as any arrive (each
    /// job's once, in arrival order); empty when the deadline passes first or nothing is outstanding.
    /// Throws when a job could not be published (the broker refused it, or it timed out).
    public func answers(until deadline: ContinuousClock.Instant) throws(Failure) -> [Answer] {
        let clock = ContinuousClock()
        while !pending.isEmpty {
            if let failure = deliveryFailures.first { throw .kafka(failure) }
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { return [] }
            let wait = Int32(clamping: min(200, max(1, left.wholeMilliseconds)))
            let answers = reader.poll(max: 1000, timeoutMs: wait).compactMap(match)
            if !answers.isEmpty { return answers }
        }
        return []
    }

    /// Publishes `job` and waits for its verdict until `timeout` passes (other jobs' verdicts that arrive
    /// meanwhile stay outstanding only if they were not yet read: call ``answers(until:)`` for those).
    public func call(_ job: [UInt8], timeout: Duration, traceparent: String? = nil) throws(Failure) -> Answer {
        let submitted = try publish(job, traceparent: traceparent)
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let answers = try answers(until: deadline)
            if let answer = answers.first(where: { $0.submitted == submitted }) { return answer }
            if answers.isEmpty { throw .timedOut([submitted]) }
        }
    }

    /// A reply this client asked for: its correlation id pending and its jobId header the job's. Anything
    /// else on the topic (other clients' replies, forgeries) is ignored.
    private func match(_ message: KafkaMessage) -> Answer? {
        guard let correlation = message.headers.first(where: { $0.name == JobHeaders.correlationId })?.value,
            let submitted = pending[correlation],
            message.headers.first(where: { $0.name == JobHeaders.jobId })?.value == Array(submitted.jobId.utf8),
            let verdict = JSONValue.parse(message.value)
        else { return nil }
        pending[correlation] = nil
        return Answer(submitted: submitted, value: message.value, verdict: verdict)
    }

    /// 128 random bits in hex, from the system's cryptographic generator: unguessable, so another client
    /// cannot answer in this one's place by accident.
    static func freshCorrelationId() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for _ in 0..<2 {
            var word = generator.next() as UInt64
            for _ in 0..<16 {
                text.append(digits[Int(word & 0xf)])
                word >>= 4
            }
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// Publications the broker did not take, reported on the producer's delivery thread.
private final class DeliveryFailures: Sendable {
    private let errors = Mutex<[KafkaError]>([])

    func record(_ error: KafkaError) { errors.withLock { $0.append(error) } }

    var first: KafkaError? { errors.withLock { $0.first } }
}
