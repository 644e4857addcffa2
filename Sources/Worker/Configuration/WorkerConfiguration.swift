import AppleReceipts
import AttestCore
import AttestJobs
import AttestTokens
import AttestVerifier
import Foundation
import KafkaClient
import Store

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
    /// ATTEST_ANDROID_TRUST_ANCHORS: test roots replacing Google's keys.
    public var androidTrustAnchorsPath: String?
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
    /// Google's Android certificate status list: where it is fetched, a file to start from, how often and
    /// when it is stale (ATTEST_ANDROID_STATUS_LIST_*).
    public var androidStatusList: AndroidStatusListRefresher.Settings

    /// The key set to serve for verdict tokens (`{"keys": []}` without keys, so clients get an answer).
    public var jwksJSON: String { (tokenSigner?.jwks ?? JWKS(keys: [])).json.serialized() }

    /// Every setting, in the order `run --help`, `describe` and docs/CONFIGURATION.md list them: name,
    /// default (nil: required), accepted values (the numeric bounds `load` enforces are read from here),
    /// whether it is redacted in the log, and what it does.
    public static let settings: [ConfigurationSetting] = [
        .init("ATTEST_KAFKA_BROKERS", nil, .text("`host:port`, comma-separated"),
              "The Kafka bootstrap servers (`bootstrap.servers`) of the consumer and the producer."),
        .init("ATTEST_DATABASE_URL", nil, .text("a libpq connection string (URI or `key=value`)"), secret: true,
              "The PostgreSQL database: every worker of a group uses the same one. Its password is redacted in the log."),
        .init("ATTEST_HTTP_ADDRESS", "127.0.0.1:8080", .text("`HOST:PORT` (port 0: any free port)"),
              "The product listener, the one clients may reach: `POST /v1/challenges`, `GET /v1/apps/{teamId}.{bundleId}/usage`, `GET /.well-known/jwks.json`."),
        .init("ATTEST_OPS_HTTP_ADDRESS", "127.0.0.1:9090", .text("`HOST:PORT`, not the product listener's"),
              "The operations listener, for the platform and Prometheus only: `GET /healthz`, `GET /readyz`, `GET /metrics`."),
        .init("ATTEST_TRUST_ANCHORS", "", .text("a readable PEM file"),
              "Replaces Apple's pinned App Attestation root: tests and load generators only, logged as a warning at start."),
        .init("ATTEST_RECEIPT_TRUST_ANCHORS", "", .text("a readable PEM file"),
              "Replaces Apple Root CA - G3 for receipts: tests only, logged as a warning at start."),
        .init("ATTEST_ANDROID_TRUST_ANCHORS", "", .text("a readable PEM file"),
              "Replaces Google's pinned Android attestation root keys with the keys of these certificates: tests and load generators only, logged as a warning at start."),
        .init("ATTEST_JOBS_TOPIC", "appattest.jobs", .text("a topic name"),
              "The jobs topic the worker consumes: attestations and assertions, keyed by keyId. The worker creates no topic."),
        .init("ATTEST_ASSERTION_JOBS_TOPIC", "", .text("a topic name, or empty"),
              "A second jobs topic, consumed too. A deployment that splits the kinds must publish a device's assertions only after its attestation verdict."),
        .init("ATTEST_VERDICTS_TOPIC", "appattest.verdicts", .text("a topic name"),
              "Where every verdict is published, keyed by keyId, with the `jobId` header."),
        .init("ATTEST_DEADLETTER_TOPIC", "appattest.deadletter", .text("a topic name"),
              "Where messages that are not jobs go (Schemas/deadletter.schema.json)."),
        .init("ATTEST_EVENTS_TOPIC", "appattest.events", .text("a topic name"),
              "Where quota crossings, grace periods, risk category changes and revocations are published (Schemas/event.schema.json)."),
        .init("ATTEST_REPLY_TOPICS", "", .text("comma-separated topic names; an entry ending in `*` is a prefix"),
              "The topics a job's `reply-to` header may name. Empty: none. The worker's own topics never are."),
        .init("ATTEST_CONSUMER_GROUP", "attest-worker", .text("a consumer group id"),
              "The Kafka consumer group: the workers of one group share the jobs topics' partitions."),
        .init("ATTEST_KAFKA_PROPERTIES", "", .text("librdkafka `key=value` pairs, separated by commas or newlines"), secret: true,
              "librdkafka properties for both clients (TLS, SASL, tuning; consumer-only ones reach the consumer alone); `message.max.bytes`, from 65,536 to 16 MiB, bounds every published message. Values of keys naming a secret are redacted in the log."),
        .init("ATTEST_MAX_JOB_AGE", "86400", .integer(1, 1_000_000_000),
              "Seconds a job's `receivedAt` may lie in the past; older is `job_invalid`/`received_at_out_of_range`."),
        .init("ATTEST_MAX_FUTURE_SKEW", "60", .integer(0, 1_000_000_000),
              "Seconds a job's `receivedAt` may lie ahead of the worker's clock (also the slack around a challenge's issue time)."),
        .init("ATTEST_MAX_RECEIVED_BEFORE_BROKER", "", .integer(0, 1_000_000_000),
              "Seconds a job's `receivedAt` may precede its Kafka timestamp (`job_invalid`/`received_at_broker_mismatch`); unset: not checked. Meant for LogAppendTime topics."),
        .init("ATTEST_MAX_MESSAGE_BYTES", "262144", .integer(1024, 1_000_000_000),
              "The largest job accepted, in bytes; larger is dead-lettered (and answered `message_too_large` when its jobId can be read). At most half the producer's `message.max.bytes`."),
        .init("ATTEST_WORKERS", "0", .integer(0, 1024),
              "Verification threads; 0: one per CPU core."),
        .init("ATTEST_BATCH_SIZE", "512", .integer(1, 100_000),
              "Jobs a lane decides and stores together, in one transaction. At most ATTEST_MAX_BUFFERED_MESSAGES."),
        .init("ATTEST_BATCH_LANES", "2", .integer(1, 256),
              "Batch threads, each with its own PostgreSQL connection and share of the partitions, so one stores while another decides."),
        .init("ATTEST_MAX_BUFFERED_MESSAGES", "8192", .integer(1, 10_000_000),
              "Messages buffered or unacknowledged before the intake waits (and, after ATTEST_PAUSE_AFTER_MS, pauses its partitions)."),
        .init("ATTEST_MAX_BUFFERED_BYTES", "134217728", .integer(1 << 20, 1 << 40),
              "The same bound in bytes (outbound messages count twice until acknowledged). At least ATTEST_MAX_MESSAGE_BYTES."),
        .init("ATTEST_PAUSE_AFTER_MS", "2000", .integer(0, 86_400_000),
              "Milliseconds the buffer may stay full before the partitions are paused (pausing drops librdkafka's prefetch)."),
        .init("ATTEST_MIGRATE_AT_START", "true", .boolean,
              "Apply the bundled migrations at start. false: the worker only checks, and `/readyz` stays 503 while the database lacks one (`attest-worker migrate` applies them)."),
        .init("ATTEST_ADMIT_UNKNOWN_APPS", "false", .boolean,
              "Decide jobs of unregistered apps with ATTEST_DEFAULT_ENVIRONMENTS instead of `job_invalid`/`unknown_app`: a development convenience, logged at start."),
        .init("ATTEST_DEFAULT_ENVIRONMENTS", "production", .oneOf(["production", "development", "any"]),
              "The App Attest environments admitted for unregistered apps when ATTEST_ADMIT_UNKNOWN_APPS is true."),
        .init("ATTEST_SHUTDOWN_TIMEOUT", "20", .integer(1, 86_400),
              "Seconds an orderly stop (SIGTERM, SIGINT) may take; past it the worker exits 1 naming the component that held it."),
        .init("ATTEST_LOG_LEVEL", "info", .oneOf(["debug", "info", "warning", "error"]),
              "The least severe log line written (JSON lines on stderr)."),
        .init("ATTEST_TOKEN_KEYS", "", .text("comma-separated P-256 PEM files (PKCS#8 or SEC1, unencrypted)"),
              "Verdict-token keys: the first signs accepted verdicts' tokens, all are published at `/.well-known/jwks.json`. Empty: no tokens. The paths are not secret; the files are."),
        .init("ATTEST_TOKEN_ISSUER", TokenSigner.defaultIssuer, .text("a non-empty string"),
              "The tokens' `iss` claim."),
        .init("ATTEST_CHALLENGES_PER_MINUTE", "600", .integer(1, 1_000_000_000),
              "Challenges `POST /v1/challenges` issues per app per minute, shared by every worker (also the usage endpoint's own bucket)."),
        .init("ATTEST_CHALLENGE_BURST", "60", .integer(1, 1_000_000_000),
              "The per-app challenge bucket's size."),
        .init("ATTEST_CHALLENGE_SECRET", "", .text("at least 32 bytes, or empty"), secret: true,
              "A bearer secret that may issue challenges and read usage for every app. Empty: per-app API keys only."),
        .init("ATTEST_CHALLENGE_FAILURES_PER_IP_PER_MINUTE", "30", .integer(1, 1_000_000_000),
              "Refused challenge or usage requests admitted per minute from one client address (IPv6: per /64) before 429."),
        .init("ATTEST_CHALLENGE_FAILURES_PER_MINUTE", "600", .integer(1, 1_000_000_000),
              "Refused challenge or usage requests admitted per minute from all addresses together before 429."),
        .init("ATTEST_HTTP_MAX_CONNECTIONS", "64", .integer(1, 1_000_000_000),
              "Connections each listener holds at once."),
        .init("ATTEST_HTTP_MAX_CONNECTIONS_PER_IP", "8", .integer(1, 1_000_000_000),
              "Connections each listener holds from one IPv4 address or IPv6 /64. At most ATTEST_HTTP_MAX_CONNECTIONS."),
        .init("ATTEST_HTTP_REQUEST_TIMEOUT", "10", .integer(1, 1_000_000_000),
              "Seconds a whole request may take to arrive and be answered (also the idle timeout); connections cut are counted."),
        .init("ATTEST_HTTP_MAX_BODY_BYTES", "4096", .integer(1024, 1_000_000_000),
              "The largest request body; larger is 413."),
        .init("ATTEST_HTTP_MAX_HEADER_BYTES", "16384", .integer(4096, 1_000_000_000),
              "Memory per connection for the request line and headers; larger is 431 or 414."),
        .init("ATTEST_VERDICT_RETENTION", "8d", .duration(1, 100 * 366 * 86_400),
              "How long verdicts are kept (a redelivery within it gets its stored verdict). At least ATTEST_MAX_JOB_AGE plus ATTEST_PARTITION_WIDTH; set it above the jobs topics' retention plus ATTEST_MAX_JOB_AGE."),
        .init("ATTEST_RISK_HISTORY_RETENTION", "90d", .duration(1, 100 * 366 * 86_400),
              "How long risk score history is kept. At least ATTEST_MAX_JOB_AGE plus ATTEST_PARTITION_WIDTH."),
        .init("ATTEST_BILLING_RETENTION_MONTHS", "25", .integer(1, 1200),
              "Billing months (counted devices, totals, quota crossings) kept before the current UTC month."),
        .init("ATTEST_PARTITION_WIDTH", "1d", .duration(10, 31 * 86_400),
              "The time span of each new verdicts and risk-history partition; retention drops whole partitions."),
        .init("ATTEST_RECEIPT_REFRESH_SEEN_DAYS", "30", .integer(1, 3650),
              "Receipt refresh covers devices seen within this many days."),
        .init("ATTEST_RECEIPT_REFRESH_PER_MINUTE", "60", .integer(1, 60_000),
              "Requests to Apple's attestation-data endpoint per team per minute, across workers."),
        .init("ATTEST_RECEIPT_REFRESH_INTERVAL_MS", "5000", .integer(10, 3_600_000),
              "Milliseconds between a worker's receipt refresh rounds."),
        .init("ATTEST_RECEIPT_METRICS_RETENTION_DAYS", "180", .integer(1, 3650),
              "Days a device's refreshed receipt risk metrics are kept."),
        .init("ATTEST_ANDROID_STATUS_LIST_URL", "", .text("an http or https URL; empty: not fetched"),
              "Where workers fetch Google's Android certificate status list, one worker for all (production: https://android.googleapis.com/attestation/status), stored in PostgreSQL for every worker. With neither this nor ATTEST_ANDROID_STATUS_LIST_FILE set, no list is kept."),
        .init("ATTEST_ANDROID_STATUS_LIST_FILE", "", .text("a readable status list file (Google's JSON)"),
              "A status list stored at start unless a newer one is stored already (`attest-worker status-list fetch` writes one); a file that does not parse stops the start."),
        .init("ATTEST_ANDROID_STATUS_LIST_REFRESH", "1h", .duration(60, 7 * 86_400),
              "How long after a fetch the next is due (a failed fetch is retried after 5 minutes)."),
        .init("ATTEST_ANDROID_STATUS_LIST_MAX_AGE", "2d", .duration(300, 366 * 86_400),
              "The age past which the status list is stale: exported beside its age for the alert AttestAndroidStatusListStale."),
        .init("ATTEST_ANDROID_STATUS_LIST_STALE", "refuse", .oneOf(AndroidStatusGate.WhenStale.allCases.map(\.rawValue)),
              "What Android attestations get while the status list is stale (or none was loaded yet) when a list is kept: `refuse`, `android_validation_failed`/`status_list_stale` (a revoked chain cannot be told apart); `warn`, checked against the last list while the alert warns."),
    ] + ReceiptRefreshSettings.settings

    /// The settings by name.
    static let settingsByName = Dictionary(uniqueKeysWithValues: settings.map { ($0.name, $0) })

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
            androidTrustAnchorsPath: reader.optionalFile("ATTEST_ANDROID_TRUST_ANCHORS"),
            receiptTrustAnchorsPath: reader.optionalFile("ATTEST_RECEIPT_TRUST_ANCHORS"),
            jobsTopics: [reader.required("ATTEST_JOBS_TOPIC")] + [resolved["ATTEST_ASSERTION_JOBS_TOPIC"]!].filter { !$0.isEmpty },
            verdictsTopic: reader.required("ATTEST_VERDICTS_TOPIC"),
            deadLetterTopic: reader.required("ATTEST_DEADLETTER_TOPIC"),
            eventsTopic: reader.required("ATTEST_EVENTS_TOPIC"),
            consumerGroup: reader.required("ATTEST_CONSUMER_GROUP"),
            kafkaProperties: reader.properties("ATTEST_KAFKA_PROPERTIES"),
            maxJobAgeSeconds: Int64(reader.integer("ATTEST_MAX_JOB_AGE")),
            maxFutureSkewSeconds: Int64(reader.integer("ATTEST_MAX_FUTURE_SKEW")),
            maxReceivedBeforeBrokerSeconds: reader.optionalInteger("ATTEST_MAX_RECEIVED_BEFORE_BROKER").map(Int64.init),
            maxMessageBytes: reader.integer("ATTEST_MAX_MESSAGE_BYTES"),
            workers: { let n = reader.integer("ATTEST_WORKERS"); return n == 0 ? ProcessInfo.processInfo.activeProcessorCount : n }(),
            batchSize: reader.integer("ATTEST_BATCH_SIZE"),
            batchLanes: reader.integer("ATTEST_BATCH_LANES"),
            maxBufferedMessages: reader.integer("ATTEST_MAX_BUFFERED_MESSAGES"),
            maxBufferedBytes: reader.integer("ATTEST_MAX_BUFFERED_BYTES"),
            pauseAfterSeconds: Double(reader.integer("ATTEST_PAUSE_AFTER_MS")) / 1000,
            migrateAtStart: reader.boolean("ATTEST_MIGRATE_AT_START"),
            admitUnknownApps: reader.boolean("ATTEST_ADMIT_UNKNOWN_APPS"),
            defaultEnvironments: reader.oneOf("ATTEST_DEFAULT_ENVIRONMENTS", ["production", "development", "any"]),
            shutdownTimeoutSeconds: Double(reader.integer("ATTEST_SHUTDOWN_TIMEOUT")),
            logLevel: reader.oneOf("ATTEST_LOG_LEVEL", ["debug", "info", "warning", "error"]),
            challengesPerMinute: reader.integer("ATTEST_CHALLENGES_PER_MINUTE"),
            challengeBurst: reader.integer("ATTEST_CHALLENGE_BURST"),
            challengeSecret: reader.secret("ATTEST_CHALLENGE_SECRET", minBytes: 32),
            challengeFailuresPerIPPerMinute: reader.integer("ATTEST_CHALLENGE_FAILURES_PER_IP_PER_MINUTE"),
            challengeFailuresPerMinute: reader.integer("ATTEST_CHALLENGE_FAILURES_PER_MINUTE"),
            httpMaxConnections: reader.integer("ATTEST_HTTP_MAX_CONNECTIONS"),
            httpMaxConnectionsPerIP: reader.integer("ATTEST_HTTP_MAX_CONNECTIONS_PER_IP"),
            httpRequestTimeoutSeconds: reader.integer("ATTEST_HTTP_REQUEST_TIMEOUT"),
            httpMaxBodyBytes: reader.integer("ATTEST_HTTP_MAX_BODY_BYTES"),
            httpMaxHeaderBytes: reader.integer("ATTEST_HTTP_MAX_HEADER_BYTES"),
            tokenSigner: reader.tokenSigner("ATTEST_TOKEN_KEYS", issuer: "ATTEST_TOKEN_ISSUER"),
            outboundBudget: reader.outboundBudget("ATTEST_KAFKA_PROPERTIES"),
            replyTopics: reader.replyTopics(
                "ATTEST_REPLY_TOPICS",
                reserved: [
                    "ATTEST_JOBS_TOPIC", "ATTEST_ASSERTION_JOBS_TOPIC", "ATTEST_VERDICTS_TOPIC", "ATTEST_DEADLETTER_TOPIC",
                    "ATTEST_EVENTS_TOPIC",
                ]),
            verdictRetentionSeconds: reader.duration("ATTEST_VERDICT_RETENTION"),
            riskHistoryRetentionSeconds: reader.duration("ATTEST_RISK_HISTORY_RETENTION"),
            billingRetentionMonths: reader.integer("ATTEST_BILLING_RETENTION_MONTHS"),
            partitionWidthSeconds: reader.duration("ATTEST_PARTITION_WIDTH"),
            receiptRefresh: reader.receiptRefresh(),
            receiptClient: reader.receiptClient(),
            androidStatusList: reader.androidStatusList())
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

        /// Every numeric setting has a range (its `allowed` in `settings`): values beyond it (or beyond Int)
        /// are refused here, so that no later arithmetic on them can overflow.
        mutating func integer(_ name: String) -> Int {
            let bounds = WorkerConfiguration.settingsByName[name]!.integerBounds
            let (min, max) = (bounds.lowerBound, bounds.upperBound)
            guard let value = Int(values[name] ?? ""), value >= min, value <= max else {
                problems.append("\(name) must be a whole number from \(min) to \(max) (got \"\(values[name] ?? "")\")")
                return min
            }
            return value
        }

        /// A duration: whole seconds, or a whole number with the unit `s`, `m`, `h` or `d` ("8d").
        mutating func duration(_ name: String) -> Int64 {
            let bounds = WorkerConfiguration.settingsByName[name]!.durationBounds
            let (minSeconds, maxSeconds) = (bounds.lowerBound, bounds.upperBound)
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
        mutating func optionalInteger(_ name: String) -> Int? {
            (values[name] ?? "").isEmpty ? nil : integer(name)
        }

        /// ATTEST_RECEIPT_REFRESH_*: a team's budget holds 10 seconds' worth of its rate (at least 1).
        mutating func receiptRefresh() -> ReceiptRefresher.Settings {
            let perMinute = integer("ATTEST_RECEIPT_REFRESH_PER_MINUTE")
            return ReceiptRefresher.Settings(
                schedule: RefreshSchedule(seenWithinSeconds: Int64(integer("ATTEST_RECEIPT_REFRESH_SEEN_DAYS")) * 86_400),
                interval: .milliseconds(integer("ATTEST_RECEIPT_REFRESH_INTERVAL_MS")),
                perTeam: RateLimitStore.Limit(perMinute: perMinute, burst: max(1, perMinute / 6)),
                metricRetentionSeconds: Int64(integer("ATTEST_RECEIPT_METRICS_RETENTION_DAYS")) * 86_400)
        }

        /// ATTEST_ANDROID_STATUS_LIST_*: the URL must be http(s); the file is read and parsed now, so a bad
        /// one stops the start rather than a round.
        mutating func androidStatusList() -> AndroidStatusListRefresher.Settings {
            var settings = AndroidStatusListRefresher.Settings()
            let url = values["ATTEST_ANDROID_STATUS_LIST_URL"] ?? ""
            if !url.isEmpty {
                if url.lowercased().hasPrefix("https://") || url.lowercased().hasPrefix("http://") {
                    settings.url = url
                } else {
                    problems.append("ATTEST_ANDROID_STATUS_LIST_URL must be an http or https URL")
                }
            }
            if let path = optionalFile("ATTEST_ANDROID_STATUS_LIST_FILE"), let data = FileManager.default.contents(atPath: path) {
                do {
                    let list = try AndroidStatusList(json: Array(data))
                    let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? Date()
                    settings.file = (path, Array(data), list, Timestamp(seconds: Int64(modified.timeIntervalSince1970)))
                } catch {
                    problems.append("ATTEST_ANDROID_STATUS_LIST_FILE: \(path): \(error)")
                }
            }
            settings.refreshSeconds = duration("ATTEST_ANDROID_STATUS_LIST_REFRESH")
            settings.maxAgeSeconds = duration("ATTEST_ANDROID_STATUS_LIST_MAX_AGE")
            settings.whenStale = AndroidStatusGate.WhenStale(
                rawValue: oneOf("ATTEST_ANDROID_STATUS_LIST_STALE", AndroidStatusGate.WhenStale.allCases.map(\.rawValue))) ?? .refuse
            return settings
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
