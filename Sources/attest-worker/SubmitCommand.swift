import AttestCLI
import AttestClient
import AttestCore
import AttestJobs
import Foundation
import KafkaClient
import Worker

/// `attest-worker submit [FILE]`: the round trip from the command line, on ``AttestClient`` (CONTRACT 6).
enum SubmitCommand: Subcommand {
    static let help = """
        usage: attest-worker submit [FILE] [--timeout SECONDS] [--reply-topic NAME] [--config FILE]

        Publishes jobs (JSON lines from FILE, else stdin; blank lines skipped) to the jobs topic, keyed by
        keyId, asking for each verdict on the reply topic (default appattest.replies, created if missing),
        and prints each verdict as one JSON line on stdout as it arrives; progress goes to stderr. Kafka
        settings as for `run`: ATTEST_KAFKA_BROKERS, ATTEST_KAFKA_PROPERTIES, ATTEST_JOBS_TOPIC, from the
        environment or --config/ATTEST_CONFIG. The worker must allow the reply topic
        (ATTEST_REPLY_TOPICS=appattest.replies*).

        Exit status: 0 every job answered and accepted, 1 every job answered and some rejected, 2 a usage
        error or --timeout (default 30) seconds passing first.
        """

    static let defaultReplyTopic = "appattest.replies"

    static func run(_ args: inout Arguments) throws -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let file = try args.option("config") ?? environment["ATTEST_CONFIG"]
        let timeout = try args.integer("timeout", min: 1) ?? 30
        let replyTopic = try args.option("reply-topic") ?? defaultReplyTopic
        let path = try args.positionals(max: 1).first
        guard JobHeaders.topicName(Array(replyTopic.utf8)) != nil else {
            throw Arguments.UsageError(description: "--reply-topic: not a topic name")
        }
        let values = try WorkerConfiguration.values(file: file, environment: environment)
        guard let brokers = values["ATTEST_KAFKA_BROKERS"], !brokers.isEmpty else {
            throw Arguments.UsageError(description: "ATTEST_KAFKA_BROKERS is required")
        }
        let jobsTopic = values["ATTEST_JOBS_TOPIC"].flatMap { $0.isEmpty ? nil : $0 } ?? "appattest.jobs"
        let properties = try KafkaProperties.parse(values["ATTEST_KAFKA_PROPERTIES"] ?? "")
            .merging(["bootstrap.servers": brokers]) { _, new in new }

        // Every line is checked before anything is published: a line that could never be answered is a
        // usage error, not a wait until the timeout.
        var jobs = [[UInt8]]()
        let reader = try LineReader(path: path)
        var number = 0
        while let line = try reader.next() {
            number += 1
            if line.allSatisfy(\.isWhitespace) { continue }
            let bytes = Array(line.utf8)
            guard let json = JSONValue.parse(bytes), case .string(let jobId)? = json["jobId"], !jobId.isEmpty,
                jobId.utf8.count <= RecordClassifier.maxJobIdBytes, !jobId.utf8.contains(0)
            else {
                throw Arguments.UsageError(description: "line \(number): not a JSON object with a usable jobId")
            }
            jobs.append(bytes)
        }
        guard !jobs.isEmpty else { throw Arguments.UsageError(description: "no jobs in \(path ?? "stdin")") }

        let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
        let client: AttestClient
        do {
            let producerProperties = properties.filter { !KafkaProperties.consumerOnly.contains($0.key) }
            try KafkaAdmin(properties: producerProperties).createTopics([(name: replyTopic, partitions: 1)], timeoutMs: 10_000)
            client = try AttestClient(
                producerProperties: producerProperties,
                consumerProperties: properties, jobsTopic: jobsTopic, replyTopic: replyTopic)
            for job in jobs { try client.publish(job) }
        } catch {
            progress("submit: \(error)")
            return 2
        }
        progress("submit: published \(jobs.count) job(s) to \(jobsTopic); awaiting verdicts on \(replyTopic)")
        var (accepted, rejected) = (0, 0)
        while !client.outstanding.isEmpty {
            let answers: [AttestClient.Answer]
            do {
                answers = try client.answers(until: deadline)
            } catch {
                progress("submit: \(error)")
                return 2
            }
            if answers.isEmpty {
                let waiting = client.outstanding.map(\.jobId).sorted()
                progress("submit: timed out after \(timeout) s; \(waiting.count) of \(jobs.count) unanswered: \(waiting.prefix(10).joined(separator: ", "))")
                return 2
            }
            for answer in answers {
                FileHandle.standardOutput.write(Data(answer.value + [0x0a]))
                if answer.ok { accepted += 1 } else { rejected += 1 }
            }
        }
        progress("submit: \(jobs.count) answered: \(accepted) accepted, \(rejected) rejected")
        return rejected == 0 ? 0 : 1
    }

    private static func progress(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
