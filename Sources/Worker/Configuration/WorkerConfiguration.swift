import AppleReceipts
import AttestCore
import AttestJobs
import AttestTokens
import Foundation
import KafkaClient

/// Everything `attest-worker run` needs, read from a configuration file and the environment (which wins),
/// validated in one place so that every problem is reported at start with a clear message (CONTRACT 6).
///
/// The file uses the environment's own names, one `NAME=value` per line (`#` comments), so a deployment can
/// move settings between the two freely.
public struct WorkerConfiguration: Sendable {
    public var kafkaBrokers: String
    public var databaseURL: String
    /// The product listener: challenges and the verdict-token key set.
    public var httpAddress: String
    /// The operations listener: `/healthz`, `/readyz`, `/metrics`, apart so that they can stay on a private
    /// network while the product endpoints face clients.
    public var opsHTTPAddress: String
    /// PEM files replacing Apple's pinned roots: for tests and load generators only.
    public var trustAnchorsPath: String?
    public var receiptTrustAnchorsPath: String?
    public var jobsTopics: [String]
    public var verdictsTopic: String
    public var deadLetterTopic: String
    /// Where quota crossings, grace periods and risk category changes are published (the events outbox).
    public var eventsTopic: String
    public var consumerGroup: String
    public var kafkaProperties: [String: String]
    public var maxJobAgeSeconds: Int64
    public var maxFutureSkewSeconds: Int64
    /// How long before its broker timestamp a job's receivedAt may be; nil (the default): not checked.
    public var maxReceivedBeforeBrokerSeconds: Int64?
    public var maxMessageBytes: Int
    /// Verification threads.
    public var workers: Int
    /// Jobs decided and stored together (one database round trip per batch).
    public var batchSize: Int
    /// Batch threads, each with its own database connection and its own share of the partitions, so one
    /// batch is stored while the next is decided.
    public var batchLanes: Int
    /// Messages buffered ahead of the batch loop before partitions are paused.
    public var maxBufferedMessages: Int
    /// The same bound in bytes of the messages held (buffered and unacknowledged).
    public var maxBufferedBytes: Int
    /// How long the buffer may stay full before partitions are paused (see `WorkerService.Settings`).
    public var pauseAfterSeconds: Double
    public var migrateAtStart: Bool
    /// Admit jobs for apps that are not registered, with `defaultEnvironments` (development convenience).
    public var admitUnknownApps: Bool
    public var defaultEnvironments: String
    public var shutdownTimeoutSeconds: Double
    public var logLevel: String
    /// `POST /v1/challenges` per app, shared by every worker (PostgreSQL): the sustained rate and the burst.
    public var challengesPerMinute: Int
    public var challengeBurst: Int
    /// A secret whose bearer may issue challenges for every app (nil: API keys only).
    public var challengeSecret: String?
    /// Refused issuance requests admitted per minute from one client address (IPv6: per /64) and from all
    /// together, before they are answered 429; each bucket holds a minute's worth.
    public var challengeFailuresPerIPPerMinute: Int
    public var challengeFailuresPerMinute: Int
    /// Both listeners' libmicrohttpd limits (see `HTTPServer.Configuration`).
    public var httpMaxConnections: Int
    public var httpMaxConnectionsPerIP: Int
    public var httpRequestTimeoutSeconds: Int
    public var httpMaxBodyBytes: Int
    public var httpMaxHeaderBytes: Int
    /// The verdict-token key ring from `ATTEST_TOKEN_KEYS` (the first key signs, all are published) and
    /// `ATTEST_TOKEN_ISSUER`; nil when no keys are configured, and then verdicts carry no token.
    public var tokenSigner: TokenSigner?
    /// The producer's `message.max.bytes` (from ATTEST_KAFKA_PROPERTIES, else librdkafka's default), which
    /// every verdict and dead letter stays within.
    public var outboundBudget: OutboundBudget
    /// ATTEST_REPLY_TOPICS: the topics a job's `reply-to` may name (none by default); the worker's own
    /// topics are never among them.
    public var replyTopics: ReplyTopics
    /// Retention (docs/SCALING.md, "Retention"): a verdict's and a risk score change's partition is dropped
    /// once it is wholly older than these; billing months (counted devices, totals, crossings) before the
    /// current one and `billingRetentionMonths` before it are deleted. New partitions are this wide.
    public var verdictRetentionSeconds: Int64
    public var riskHistoryRetentionSeconds: Int64
    public var billingRetentionMonths: Int
    public var partitionWidthSeconds: Int64
    /// The receipt refresher's schedule and budgets (ATTEST_RECEIPT_REFRESH_*); refresh runs only when a
    /// DeviceCheck key is configured (``ReceiptRefreshFactory``).
    public var receiptRefresh: ReceiptRefresher.Settings
    /// The DeviceCheck keys and Apple's endpoints (ATTEST_DEVICECHECK_KEYS, ATTEST_RECEIPT_*); nil: no key,
    /// refresh off.
    public var receiptClient: ReceiptRefreshSettings?

    /// The key set to serve for verdict tokens (`{"keys": []}` without keys, so clients get an answer).
    public var jwksJSON: String { (tokenSigner?.jwks ?? JWKS(keys: [])).json.serialized() }

    /// Names and defaults, in the order `describe` prints them.
    public static let settings: [(name: String, defaultValue: String?, secret: Bool)] = [
        ("ATTEST_KAFKA_BROKERS", nil, false),
        ("ATTEST_DATABASE_URL", nil, true),
        ("ATTEST_HTTP_ADDRESS", "127.0.0.1:8080", false),
        ("ATTEST_OPS_HTTP_ADDRESS", "127.0.0.1:9090", false),
        ("ATTEST_TRUST_ANCHORS", "", false),
        ("ATTEST_RECEIPT_TRUST_ANCHORS", "", false),
        ("ATTEST_JOBS_TOPIC", "appattest.jobs", false),
        ("ATTEST_ASSERTION_JOBS_TOPIC", "", false),
        ("ATTEST_VERDICTS_TOPIC", "appattest.verdicts", false),
        ("ATTEST_DEADLETTER_TOPIC", "appattest.deadletter", false),
        ("ATTEST_EVENTS_TOPIC", "appattest.events", false),
        ("ATTEST_REPLY_TOPICS", "", false),
        ("ATTEST_CONSUMER_GROUP", "attest-worker", false),
        ("ATTEST_KAFKA_PROPERTIES", "", true),
        ("ATTEST_MAX_JOB_AGE", "86400", false),
        ("ATTEST_MAX_FUTURE_SKEW", "60", false),
        ("ATTEST_MAX_RECEIVED_BEFORE_BROKER", "", false),
        ("ATTEST_MAX_MESSAGE_BYTES", "262144", false),
        ("ATTEST_WORKERS", "0", false),
        ("ATTEST_BATCH_SIZE", "512", false),
        ("ATTEST_BATCH_LANES", "2", false),
        ("ATTEST_MAX_BUFFERED_MESSAGES", "8192", false),
        ("ATTEST_MAX_BUFFERED_BYTES", "134217728", false),
        ("ATTEST_PAUSE_AFTER_MS", "2000", false),
        ("ATTEST_MIGRATE_AT_START", "true", false),
        ("ATTEST_ADMIT_UNKNOWN_APPS", "false", false),
        ("ATTEST_DEFAULT_ENVIRONMENTS", "production", false),
        ("ATTEST_SHUTDOWN_TIMEOUT", "20", false),
        ("ATTEST_LOG_LEVEL", "info", false),
        ("ATTEST_TOKEN_KEYS", "", false),
        ("ATTEST_TOKEN_ISSUER", TokenSigner.defaultIssuer, false),
        ("ATTEST_CHALLENGES_PER_MINUTE", "600", false),
        ("ATTEST_CHALLENGE_BURST", "60", false),
        ("ATTEST_CHALLENGE_SECRET", "", true),
        ("ATTEST_CHALLENGE_FAILURES_PER_IP_PER_MINUTE", "30", false),
        ("ATTEST_CHALLENGE_FAILURES_PER_MINUTE", "600", false),
        ("ATTEST_HTTP_MAX_CONNECTIONS", "64", false),
        ("ATTEST_HTTP_MAX_CONNECTIONS_PER_IP", "8", false),
        ("ATTEST_HTTP_REQUEST_TIMEOUT", "10", false),
        ("ATTEST_HTTP_MAX_BODY_BYTES", "4096", false),
        ("ATTEST_HTTP_MAX_HEADER_BYTES", "16384", false),
        ("ATTEST_VERDICT_RETENTION", "8d", false),
        ("ATTEST_RISK_HISTORY_RETENTION", "90d", false),
        ("ATTEST_BILLING_RETENTION_MONTHS", "25", false),
        ("ATTEST_PARTITION_WIDTH", "1d", false),
        ("ATTEST_RECEIPT_REFRESH_SEEN_DAYS", "30", false),
        ("ATTEST_RECEIPT_REFRESH_PER_MINUTE", "60", false),
        ("ATTEST_RECEIPT_REFRESH_INTERVAL_MS", "5000", false),
        ("ATTEST_RECEIPT_METRICS_RETENTION_DAYS", "180", false),
    ] + ReceiptRefreshSettings.settings

    /// The configuration problems, one message each.
    public struct Invalid: Error, CustomStringConvertible {
        public var problems: [String]
        public var description: String { problems.joined(separator: "; ") }
    }

    /// The settings from `file` (when given) overlaid by `environment`, which wins.
    public static func values(file: String?, environment: [String: String]) throws(Invalid) -> [String: String] {
        var values = [String: String]()
        var problems = [String]()
        if let file {
            if let text = try? String(contentsOfFile: file, encoding: .utf8) {
                for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let line = rawLine.trimmingCharacters(in: .whitespaces)
                    if line.isEmpty || line.hasPrefix("#") { continue }
                    guard let eq = line.firstIndex(of: "="), !line[..<eq].isEmpty else {
                        problems.append("\(file):\(number + 1): expected NAME=value")
                        continue
                    }
                    values[String(line[..<eq]).trimmingCharacters(in: .whitespaces)] =
                        String(line[line.index(after: eq)...]).trimmingCharacters(in: .whitespaces)
                }
            } else {
                problems.append("cannot read configuration file \(file)")
            }
        }
        guard problems.isEmpty else { throw Invalid(problems: problems) }
        for (name, value) in environment where name.hasPrefix("ATTEST_") { values[name] = value }
        return values
    }

    /// Reads `file` (when given) and then `environment`, which wins, and validates everything.
    public static func load(file: String?, environment: [String: String]) throws(Invalid) -> (WorkerConfiguration, [String: String]) {
        let values = try Self.values(file: file, environment: environment)
        var problems = [String]()
        let known = Set(settings.map(\.name) + ["ATTEST_CONFIG"])
        for name in values.keys.sorted() where !known.contains(name) {
            problems.append("\(name) is not a known setting")
        }
        var resolved = [String: String]()
        for setting in settings { resolved[setting.name] = values[setting.name] ?? setting.defaultValue }

        var reader = Reader(values: resolved, problems: problems)
        let configuration = WorkerConfiguration(
            kafkaBrokers: reader.required("ATTEST_KAFKA_BROKERS"),
            databaseURL: reader.required("ATTEST_DATABASE_URL"),
            httpAddress: reader.address("ATTEST_HTTP_ADDRESS"),
            opsHTTPAddress: reader.address("ATTEST_OPS_HTTP_ADDRESS"),
            trustAnchorsPath: reader.optionalFile("ATTEST_TRUST_ANCHORS"),
            receiptTrustAnchorsPath: reader.optionalFile("ATTEST_RECEIPT_TRUST_ANCHORS"),
            jobsTopics: [reader.required("ATTEST_JOBS_TOPIC")] + [resolved["ATTEST_ASSERTION_JOBS_TOPIC"]!].filter { !$0.isEmpty },
            verdictsTopic: reader.required("ATTEST_VERDICTS_TOPIC"),
            deadLetterTopic: reader.required("ATTEST_DEADLETTER_TOPIC"),
            eventsTopic: reader.required("ATTEST_EVENTS_TOPIC"),
            consumerGroup: reader.required("ATTEST_CONSUMER_GROUP"),
            kafkaProperties: reader.properties("ATTEST_KAFKA_PROPERTIES"),
            maxJobAgeSeconds: Int64(reader.integer("ATTEST_MAX_JOB_AGE", min: 1)),
            maxFutureSkewSeconds: Int64(reader.integer("ATTEST_MAX_FUTURE_SKEW", min: 0)),
            maxReceivedBeforeBrokerSeconds: reader.optionalInteger("ATTEST_MAX_RECEIVED_BEFORE_BROKER", min: 0).map(Int64.init),
            maxMessageBytes: reader.integer("ATTEST_MAX_MESSAGE_BYTES", min: 1024),
            workers: { let n = reader.integer("ATTEST_WORKERS", min: 0, max: 1024); return n == 0 ? ProcessInfo.processInfo.activeProcessorCount : n }(),
            batchSize: reader.integer("ATTEST_BATCH_SIZE", min: 1, max: 100_000),
            batchLanes: reader.integer("ATTEST_BATCH_LANES", min: 1, max: 256),
            maxBufferedMessages: reader.integer("ATTEST_MAX_BUFFERED_MESSAGES", min: 1, max: 10_000_000),
            maxBufferedBytes: reader.integer("ATTEST_MAX_BUFFERED_BYTES", min: 1 << 20, max: 1 << 40),
            pauseAfterSeconds: Double(reader.integer("ATTEST_PAUSE_AFTER_MS", min: 0, max: 86_400_000)) / 1000,
            migrateAtStart: reader.boolean("ATTEST_MIGRATE_AT_START"),
            admitUnknownApps: reader.boolean("ATTEST_ADMIT_UNKNOWN_APPS"),
            defaultEnvironments: reader.oneOf("ATTEST_DEFAULT_ENVIRONMENTS", ["production", "development", "any"]),
            shutdownTimeoutSeconds: Double(reader.integer("ATTEST_SHUTDOWN_TIMEOUT", min: 1, max: 86_400)),
            logLevel: reader.oneOf("ATTEST_LOG_LEVEL", ["debug", "info", "warning", "error"]),
            challengesPerMinute: reader.integer("ATTEST_CHALLENGES_PER_MINUTE", min: 1),
            challengeBurst: reader.integer("ATTEST_CHALLENGE_BURST", min: 1),
            challengeSecret: reader.secret("ATTEST_CHALLENGE_SECRET", minBytes: 32),
            challengeFailuresPerIPPerMinute: reader.integer("ATTEST_CHALLENGE_FAILURES_PER_IP_PER_MINUTE", min: 1),
            challengeFailuresPerMinute: reader.integer("ATTEST_CHALLENGE_FAILURES_PER_MINUTE", min: 1),
            httpMaxConnections: reader.integer("ATTEST_HTTP_MAX_CONNECTIONS", min: 1),
            httpMaxConnectionsPerIP: reader.integer("ATTEST_HTTP_MAX_CONNECTIONS_PER_IP", min: 1),
            httpRequestTimeoutSeconds: reader.integer("ATTEST_HTTP_REQUEST_TIMEOUT", min: 1),
            httpMaxBodyBytes: reader.integer("ATTEST_HTTP_MAX_BODY_BYTES", min: 1024),
            httpMaxHeaderBytes: reader.integer("ATTEST_HTTP_MAX_HEADER_BYTES", min: 4096),
            tokenSigner: reader.tokenSigner("ATTEST_TOKEN_KEYS", issuer: "ATTEST_TOKEN_ISSUER"),
            outboundBudget: reader.outboundBudget("ATTEST_KAFKA_PROPERTIES"),
            replyTopics: reader.replyTopics(
                "ATTEST_REPLY_TOPICS",
                reserved: [
                    "ATTEST_JOBS_TOPIC", "ATTEST_ASSERTION_JOBS_TOPIC", "ATTEST_VERDICTS_TOPIC", "ATTEST_DEADLETTER_TOPIC",
                    "ATTEST_EVENTS_TOPIC",
                ]),
            verdictRetentionSeconds: reader.duration("ATTEST_VERDICT_RETENTION", maxSeconds: 100 * 366 * 86_400),
            riskHistoryRetentionSeconds: reader.duration("ATTEST_RISK_HISTORY_RETENTION", maxSeconds: 100 * 366 * 86_400),
            billingRetentionMonths: reader.integer("ATTEST_BILLING_RETENTION_MONTHS", min: 1, max: 1200),
            partitionWidthSeconds: reader.duration("ATTEST_PARTITION_WIDTH", minSeconds: 10, maxSeconds: 31 * 86_400),
            receiptRefresh: reader.receiptRefresh(),
            receiptClient: reader.receiptClient())
        // A redelivery must find its verdict while its job can still be decided, and the partitions rows
        // are stored in now must never be dropped: at least the maximum job age plus one partition.
        for (name, seconds) in [
            ("ATTEST_VERDICT_RETENTION", configuration.verdictRetentionSeconds),
            ("ATTEST_RISK_HISTORY_RETENTION", configuration.riskHistoryRetentionSeconds),
        ] {
            let least = configuration.maxJobAgeSeconds + configuration.partitionWidthSeconds
            if seconds < least {
                reader.problems.append(
                    "\(name) must be at least ATTEST_MAX_JOB_AGE plus ATTEST_PARTITION_WIDTH (\(least) s; got \(seconds) s)")
            } else if seconds / configuration.partitionWidthSeconds > 100_000 {
                reader.problems.append("\(name) must span at most 100000 partitions of ATTEST_PARTITION_WIDTH")
            }
        }
        if configuration.httpMaxConnectionsPerIP > configuration.httpMaxConnections {
            reader.problems.append("ATTEST_HTTP_MAX_CONNECTIONS_PER_IP must not exceed ATTEST_HTTP_MAX_CONNECTIONS")
        }
        if configuration.httpAddress == configuration.opsHTTPAddress, !configuration.httpAddress.hasSuffix(":0") {
            reader.problems.append("ATTEST_OPS_HTTP_ADDRESS must differ from ATTEST_HTTP_ADDRESS")
        }
        if configuration.batchSize > configuration.maxBufferedMessages {
            reader.problems.append("ATTEST_BATCH_SIZE must not exceed ATTEST_MAX_BUFFERED_MESSAGES")
        }
        // A job's verdict echoes its fields: with jobs up to half the producer's limit every verdict fits.
        if configuration.maxMessageBytes > configuration.outboundBudget.producerLimit / 2 {
            reader.problems.append(
                "ATTEST_MAX_MESSAGE_BYTES must not exceed half the producer's message.max.bytes (\(configuration.outboundBudget.producerLimit))")
        }
        if configuration.maxBufferedBytes < configuration.maxMessageBytes {
            reader.problems.append("ATTEST_MAX_BUFFERED_BYTES must not be less than ATTEST_MAX_MESSAGE_BYTES")
        }
        guard reader.problems.isEmpty else { throw Invalid(problems: reader.problems) }
        return (configuration, resolved)
    }

    /// The settings in effect, secrets redacted, for the start-up log.
    public static func describe(_ resolved: [String: String]) -> [(String, String)] {
        settings.map { setting in
            let value = resolved[setting.name] ?? ""
            return (setting.name, setting.secret && !value.isEmpty ? redact(setting.name, value) : value)
        }
    }

    /// Passwords in a libpq URI or key=value string (``ConninfoRedaction``), and every librdkafka property
    /// value whose key names a secret (``KafkaProperties/namesSecret(_:)``).
    static func redact(_ name: String, _ value: String) -> String {
        // A secret through and through: nothing of it is printed.
        if name == "ATTEST_CHALLENGE_SECRET" { return "***" }
        return name == "ATTEST_DATABASE_URL" ? ConninfoRedaction.redacted(value) : KafkaProperties.redacted(value)
    }

    private struct Reader {
        let values: [String: String]
        var problems: [String]

        mutating func required(_ name: String) -> String {
            let value = values[name] ?? ""
            if value.isEmpty { problems.append("\(name) is required") }
            return value
        }

        /// Every numeric setting has a range: values beyond it (or beyond Int) are refused here, so that no
        /// later arithmetic on them can overflow.
        mutating func integer(_ name: String, min: Int, max: Int = 1_000_000_000) -> Int {
            guard let value = Int(values[name] ?? ""), value >= min, value <= max else {
                problems.append("\(name) must be a whole number from \(min) to \(max) (got \"\(values[name] ?? "")\")")
                return min
            }
            return value
        }

        /// A duration: whole seconds, or a whole number with the unit `s`, `m`, `h` or `d` ("8d").
        mutating func duration(_ name: String, minSeconds: Int64 = 1, maxSeconds: Int64) -> Int64 {
            let text = values[name] ?? ""
            let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
            let (digits, unit) = text.last.flatMap { units[$0] }.map { (text.dropLast(), $0) } ?? (Substring(text), 1)
            guard digits.allSatisfy(\.isASCII), let count = Int64(digits), count >= 0,
                case (let seconds, false) = count.multipliedReportingOverflow(by: unit), seconds >= minSeconds, seconds <= maxSeconds
            else {
                problems.append("\(name) must be a duration from \(minSeconds) to \(maxSeconds) seconds, as 90, 90s, 15m, 12h or 8d (got \"\(text)\")")
                return max(minSeconds, 1)
            }
            return seconds
        }

        /// The producer's `message.max.bytes` as ATTEST_KAFKA_PROPERTIES sets it (librdkafka's default otherwise),
        /// at most the consumer's 16 MiB `fetch.max.bytes` (RunCommand), which librdkafka requires.
        mutating func outboundBudget(_ name: String) -> OutboundBudget {
            guard let text = (try? KafkaProperties.parse(values[name] ?? ""))?["message.max.bytes"] else { return .standard }
            guard let limit = Int(text), limit <= 16 << 20, let budget = OutboundBudget(producerLimit: limit) else {
                problems.append(
                    "\(name): message.max.bytes must be a whole number from \(OutboundBudget.minimumProducerLimit) to \(16 << 20)")
                return .standard
            }
            return budget
        }

        /// The reply allow-list; the topics the `reserved` settings name are never allowed.
        mutating func replyTopics(_ name: String, reserved: [String]) -> ReplyTopics {
            do {
                return try ReplyTopics(parsing: values[name] ?? "", reserved: reserved.compactMap { values[$0] }.filter { !$0.isEmpty })
            } catch {
                problems.append("\(name): \(error)")
                return .none
            }
        }

        /// Empty means unset (nil).
        mutating func optionalInteger(_ name: String, min: Int) -> Int? {
            (values[name] ?? "").isEmpty ? nil : integer(name, min: min)
        }

        /// ATTEST_RECEIPT_REFRESH_*: a team's budget holds 10 seconds' worth of its rate (at least 1).
        mutating func receiptRefresh() -> ReceiptRefresher.Settings {
            let perMinute = integer("ATTEST_RECEIPT_REFRESH_PER_MINUTE", min: 1, max: 60_000)
            return ReceiptRefresher.Settings(
                schedule: RefreshSchedule(seenWithinSeconds: Int64(integer("ATTEST_RECEIPT_REFRESH_SEEN_DAYS", min: 1, max: 3650)) * 86_400),
                interval: .milliseconds(integer("ATTEST_RECEIPT_REFRESH_INTERVAL_MS", min: 10, max: 3_600_000)),
                perTeam: RateLimitStore.Limit(perMinute: perMinute, burst: max(1, perMinute / 6)),
                metricRetentionSeconds: Int64(integer("ATTEST_RECEIPT_METRICS_RETENTION_DAYS", min: 1, max: 3650)) * 86_400)
        }

        /// The client's settings, validated by their own reader (its problems join the others).
        mutating func receiptClient() -> ReceiptRefreshSettings? {
            do {
                return try ReceiptRefreshSettings.from(environment: values)
            } catch {
                problems += error.problems
                return nil
            }
        }

        mutating func boolean(_ name: String) -> Bool {
            switch (values[name] ?? "").lowercased() {
            case "true", "1", "yes": return true
            case "false", "0", "no": return false
            default:
                problems.append("\(name) must be true or false")
                return false
            }
        }

        mutating func oneOf(_ name: String, _ allowed: [String]) -> String {
            let value = values[name] ?? ""
            if !allowed.contains(value) { problems.append("\(name) must be one of \(allowed.joined(separator: ", "))") }
            return value
        }

        mutating func address(_ name: String) -> String {
            let value = values[name] ?? ""
            guard let colon = value.lastIndex(of: ":"), let port = Int(value[value.index(after: colon)...]),
                (0...65535).contains(port), colon != value.startIndex
            else {
                problems.append("\(name) must be HOST:PORT")
                return value
            }
            return value
        }

        /// nil when unset; else at least `minBytes`, so that it cannot be guessed.
        mutating func secret(_ name: String, minBytes: Int) -> String? {
            let value = values[name] ?? ""
            if value.isEmpty { return nil }
            if value.utf8.count < minBytes { problems.append("\(name) must be at least \(minBytes) bytes when set") }
            return value
        }

        mutating func optionalFile(_ name: String) -> String? {
            let value = values[name] ?? ""
            if value.isEmpty { return nil }
            if !FileManager.default.isReadableFile(atPath: value) { problems.append("\(name): cannot read \(value)") }
            return value
        }

        /// PEM key files, comma-separated, loaded now so a bad key stops the start rather than the first
        /// verdict. Errors name the file, never its contents.
        mutating func tokenSigner(_ name: String, issuer issuerName: String) -> TokenSigner? {
            let issuer = values[issuerName] ?? ""
            if issuer.isEmpty { problems.append("\(issuerName) must not be empty") }
            let paths = (values[name] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !paths.allSatisfy(\.isEmpty), !issuer.isEmpty else { return nil }
            if paths.contains(where: \.isEmpty) {
                problems.append("\(name) has an empty entry")
                return nil
            }
            do {
                return try TokenSigner(pemFiles: paths, issuer: issuer)
            } catch {
                problems.append("\(name): \(error)")
                return nil
            }
        }

        /// librdkafka passthrough properties (CONTRACT 6: "key=value" pairs separated by commas or newlines).
        mutating func properties(_ name: String) -> [String: String] {
            do {
                return try KafkaProperties.parse(values[name] ?? "")
            } catch {
                problems.append("\(name): \(error.message)")
                return [:]
            }
        }
    }
}
