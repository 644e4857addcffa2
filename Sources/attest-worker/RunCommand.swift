import AttestCLI
import AttestCore
import AttestJobs
import AttestTokens
import AttestVerifier
import Dispatch
import Foundation
import KafkaClient
import Lifecycle
import Observability
import PostgresClient
import Store
import Worker

/// `attest-worker run`: the worker service (CONTRACT 1, 5). Configuration from `--config FILE`/ATTEST_CONFIG and
/// the environment, validated and printed (secrets redacted) at start.
enum RunCommand: Subcommand {
    static let help = """
        usage: attest-worker run [--config FILE]

        Consumes jobs from Kafka, verifies them, stores devices and verdicts in PostgreSQL and publishes
        verdicts, effectively once. Settings (environment variables, which win over the file):
        \(WorkerConfiguration.settings.map { "  \($0.name)\($0.defaultValue.map { $0.isEmpty ? "" : " (default \($0))" } ?? " (required)")" }.joined(separator: "\n"))

        docs/CONFIGURATION.md is this list with what each setting accepts and does: `attest-worker run
        --help-markdown` prints it.

        SIGTERM or SIGINT stops it in order: polling, buffered jobs, acknowledgements, offsets, producer,
        then the rest in the reverse of their start, within ATTEST_SHUTDOWN_TIMEOUT (else exit status 1).
        A component that fails stops the others the same way and exits 2 with one line.
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        // The configuration reference (docs/CONFIGURATION.md), generated from the list of settings.
        if args.flag("help-markdown") {
            _ = try args.positionals(max: 0)
            print(WorkerConfiguration.referenceMarkdown, terminator: "")
            return 0
        }
        let environment = ProcessInfo.processInfo.environment
        let file = try args.option("config") ?? environment["ATTEST_CONFIG"]
        _ = try args.positionals(max: 0)
        let (configuration, resolved) = try WorkerConfiguration.load(file: file, environment: environment)
        let logger = Logger(level: Logger.Level(name: configuration.logLevel) ?? .info)
        logger.info(
            "configuration",
            [("version", .string(ReleaseVersion.current))] + WorkerConfiguration.describe(resolved).map { ($0.0, .string($0.1)) })

        // Two listeners: operations (health, readiness, metrics) and product (challenges, usage, token
        // consumption, key set), each with
        // only its own routes, so exposing one never exposes the other. They start first (see `group`).
        let metrics = WorkerMetrics()
        // The build, for dashboards and upgrades: one series, always 1, labelled with the version.
        metrics.registry.gauge(
            "attest_build_info", help: "The running build: always 1, labelled with its version (attest-worker --version).",
            labelNames: ["version"]
        ).labels([ReleaseVersion.current]).set(1)
        var opsRoutes = HTTPRoutes()
        HealthEndpoints.register(
            on: &opsRoutes, metrics: metrics.registry, readiness: metrics.readiness.check, advisories: metrics.readiness.advisoryTexts)
        var routes = HTTPRoutes()
        // Verdict-token keys: the signing key and the retired ones whose tokens may still be in use.
        let jwks = Array(configuration.jwksJSON.utf8)
        routes.add("GET", "/.well-known/jwks.json") { _ in
            HTTPResponse(status: 200, contentType: "application/jwk-set+json", body: jwks, headers: [("Cache-Control", "max-age=300")])
        }
        let challengeLimits = ChallengeEndpoint.Limits(
            perApp: .init(perMinute: configuration.challengesPerMinute, burst: configuration.challengeBurst),
            failuresPerAddress: .init(
                perMinute: configuration.challengeFailuresPerIPPerMinute, burst: configuration.challengeFailuresPerIPPerMinute),
            failures: .init(perMinute: configuration.challengeFailuresPerMinute, burst: configuration.challengeFailuresPerMinute))
        let issuer = ChallengeIssuer(conninfo: configuration.databaseURL)
        ChallengeEndpoint(
            issuer: issuer, sharedSecret: configuration.challengeSecret,
            limits: challengeLimits, metrics: metrics, logger: logger
        ).register(on: &routes)
        UsageEndpoint(
            reader: UsageReader(conninfo: configuration.databaseURL), issuer: issuer, sharedSecret: configuration.challengeSecret,
            limits: challengeLimits, clock: SystemClock(), metrics: metrics, logger: logger
        ).register(on: &routes)
        // Limited-use tokens are spent against the keys this worker publishes, with the job skew as leeway.
        if let signer = configuration.tokenSigner {
            TokenConsumeEndpoint(
                verifier: TokenVerifier(jwks: signer.jwks, clock: SystemClock(), leewaySeconds: configuration.maxFutureSkewSeconds),
                issuer: signer.issuer, store: ConsumedTokenStore(conninfo: configuration.databaseURL),
                reader: UsageReader(conninfo: configuration.databaseURL), challengeIssuer: issuer,
                sharedSecret: configuration.challengeSecret, limits: challengeLimits, metrics: metrics, logger: logger
            ).register(on: &routes)
        }
        let cuts = metrics.registry.counter(
            "attest_http_connections_cut_total", help: "HTTP connections cut by ATTEST_HTTP_REQUEST_TIMEOUT, by listener.",
            labelNames: ["listener"])
        let listeners = [("product", configuration.httpAddress, routes), ("ops", configuration.opsHTTPAddress, opsRoutes)]
        let servers = try listeners.map { listener, address, routes in
            HTTPServer(
                name: listener,
                configuration: HTTPServer.Configuration(
                    address: try HTTPAddress(parsing: address), maxRequestBodyBytes: configuration.httpMaxBodyBytes,
                    connectionLimit: configuration.httpMaxConnections, connectionTimeoutSeconds: configuration.httpRequestTimeoutSeconds,
                    perIPConnectionLimit: configuration.httpMaxConnectionsPerIP,
                    requestDeadlineSeconds: configuration.httpRequestTimeoutSeconds, maxHeaderBytes: configuration.httpMaxHeaderBytes),
                routes: routes, diagnostics: { message in logger.debug("http diagnostic", [("message", .string(message))]) },
                deadlineCuts: cuts.labels([listener]))
        }
        let (http, opsHTTP) = (servers[0], servers[1])

        let trust = try TrustOptions.load(
            attestation: configuration.trustAnchorsPath, receipt: configuration.receiptTrustAnchorsPath,
            names: ("ATTEST_TRUST_ANCHORS", "ATTEST_RECEIPT_TRUST_ANCHORS")
        ) {
            logger.warning("trust anchor replaced: not for production", [("detail", .string($0))])
        }
        if configuration.admitUnknownApps {
            logger.warning("unknown apps are admitted with the default policy", [("environments", .string(configuration.defaultEnvironments))])
        }

        // Transient database failures are retried for as long as they last (nothing is acknowledged
        // meanwhile): readiness says why, the log says so once per outage and every 30 s while it lasts.
        let database = metrics.database
        let reconnecting = { @Sendable (writer: String, settings: [String: String]) -> PGReconnectingConnection in
            PGReconnectingConnection(
                conninfo: configuration.databaseURL, settings: settings,
                onRetry: { error, attempt, _ in
                    let fields: [(String, JSONValue)] = [
                        ("reason", .string(error.summary)), ("error", .string(error.description)), ("writer", .string(writer)),
                    ]
                    switch database.failed(error, writer: writer) {
                    case .started?: logger.warning("database failing; retrying", fields + [("attempt", .int(Int64(attempt)))])
                    case .ongoing(let retries, let seconds)?:
                        logger.warning("database still failing; retrying", fields + [
                            ("retries", .int(Int64(retries))), ("seconds", .int(seconds)),
                        ])
                    case nil: break
                    }
                },
                onRecovered: { _ in
                    guard let outage = database.recovered(writer: writer) else { return }
                    logger.info("database recovered", [("retries", .int(Int64(outage.retries))), ("seconds", .int(outage.seconds))])
                })
        }
        let connection = reconnecting("lane-0", AttestStore.sessionSettings)
        let migrations = try Migrator.bundled
        // Waits for PostgreSQL (retrying, with /readyz saying why), migrates if asked, and says whether the
        // schema is the one this build expects. On a session of its own at the planner's defaults: a
        // migration that copies a whole table must be free to scan it.
        let schemaConnection = reconnecting("schema", [:])
        let schema = ClosureService("schema", start: { _ in
            if configuration.migrateAtStart {
                let applied = try schemaConnection.run { c throws(PGError) in try Migrator.migrate(c, migrations: migrations) }
                logger.info("migrations", [("applied", .array(applied.map(JSONValue.string)))])
            }
            let version = try schemaConnection.run { c throws(PGError) in try Migrator.appliedVersion(c) }
            metrics.readiness.markReady(.postgres)
            if version >= migrations.count {
                metrics.readiness.markReady(.migrations)
            } else {
                metrics.readiness.markNotReady(.migrations, .schemaBehind(applied: version, bundled: migrations.count))
            }
        }, stop: { _ in })
        // A rate bucket idle for as long as the slowest one takes to refill is full: then it is deleted.
        let buckets: [RateLimitStore.Limit] = [
            challengeLimits.perApp, challengeLimits.failuresPerAddress, challengeLimits.failures, configuration.receiptRefresh.perTeam,
        ]
        let refillSeconds = buckets.map(\.refillSeconds).max() ?? 60
        let purger = ChallengePurger(
            conninfo: configuration.databaseURL, maxJobAgeSeconds: configuration.maxJobAgeSeconds,
            rateBucketIdleSeconds: refillSeconds, tokenSkewSeconds: configuration.maxFutureSkewSeconds, logger: logger)
        // Partitions ahead and retention (docs/SCALING.md, "Retention"): rows are stored up to the maximum job
        // age back of now; rounds run several times per partition width.
        let partitions = PartitionMaintainer(
            settings: PartitionMaintainer.Settings(
                verdicts: PartitionPlanner.Settings(
                    widthSeconds: configuration.partitionWidthSeconds, retentionSeconds: configuration.verdictRetentionSeconds,
                    lookbackSeconds: configuration.maxJobAgeSeconds),
                riskHistory: PartitionPlanner.Settings(
                    widthSeconds: configuration.partitionWidthSeconds, retentionSeconds: configuration.riskHistoryRetentionSeconds,
                    lookbackSeconds: configuration.maxJobAgeSeconds),
                billingMonths: configuration.billingRetentionMonths,
                interval: .seconds(min(300, max(1, configuration.partitionWidthSeconds / 6)))),
            conninfo: configuration.databaseURL, clock: SystemClock(), registry: metrics.registry, logger: logger)
        // Weak: the registry holds this closure, and the metrics hold the registry.
        metrics.registry.onCollect { [weak metrics] in
            guard let metrics else { return }
            let attestation = trust.attestation.cache.counts
            let receipt = trust.receipt.chain.cache.counts
            metrics.recordCache("attestation", hits: attestation.hits, misses: attestation.misses)
            metrics.recordCache("receipt", hits: receipt.hits, misses: receipt.misses)
        }
        // Google's Android certificate status list, kept in PostgreSQL for every worker beside the pipeline,
        // when a URL or a file names one (without either, no list and no age to alert on).
        let statusList = configuration.androidStatusList.url == nil && configuration.androidStatusList.file == nil
            ? nil
            : AndroidStatusListRefresher(
                conninfo: configuration.databaseURL, settings: configuration.androidStatusList, clock: SystemClock(),
                metrics: metrics.registry, logger: logger)
        if statusList == nil { logger.info("android status list off: neither ATTEST_ANDROID_STATUS_LIST_URL nor _FILE is set") }
        let androidTrust = try TrustOptions.android(
            anchors: configuration.androidTrustAnchorsPath, statusList: nil, flag: "ATTEST_ANDROID_TRUST_ANCHORS"
        ) {
            logger.warning("trust anchor replaced: not for production", [("detail", .string($0))])
        }
        let verifier = JobVerifier(
            trust: trust, androidTrust: androidTrust, clock: SystemClock(),
            timeBounds: JobVerifier.TimeBounds(
                maxAgeSeconds: configuration.maxJobAgeSeconds, maxFutureSkewSeconds: configuration.maxFutureSkewSeconds,
                maxReceivedBeforeBrokerSeconds: configuration.maxReceivedBeforeBrokerSeconds))
        // One processor per batch lane, each with its own connection, sharing the device cache: the cache
        // is only a hint, and lanes race for a device only as separate workers would.
        let devices = DeviceCache()
        var processors = [BatchProcessor(
            verifier: verifier, store: AttestStore(connection: connection), devices: devices,
            settings: BatchProcessor.Settings(
                verdictsTopic: configuration.verdictsTopic, deadLetterTopic: configuration.deadLetterTopic,
                maxMessageBytes: configuration.maxMessageBytes, admitUnknownApps: configuration.admitUnknownApps,
                defaultEnvironments: EnvironmentPolicy(rawValue: configuration.defaultEnvironments) ?? .production,
                threads: configuration.workers, tokenSigner: configuration.tokenSigner,
                outboundBudget: configuration.outboundBudget, replyTopics: configuration.replyTopics,
                androidStatus: statusList?.gate),
            metrics: metrics, logger: logger)]
        for lane in 1..<configuration.batchLanes {
            let laneConnection = reconnecting("lane-\(lane)", AttestStore.sessionSettings)
            processors.append(processors[0].sharing(store: AttestStore(connection: laneConnection)))
        }
        let base = ["bootstrap.servers": configuration.kafkaBrokers]
        // How often both clients' statistics refresh (milliseconds): the offsets attest_consumer_lag_messages
        // is computed from and the requests sent (attest_kafka_requests_total).
        let statisticsIntervalMs = "5000"
        let consumerProperties = base.merging([
            "group.id": configuration.consumerGroup, "auto.offset.reset": "earliest", "enable.auto.commit": "true",
            "auto.commit.interval.ms": "1000", "client.id": "attest-worker",
            // librdkafka's prefetch, which holds what arrives while the buffer is full (64 MB by default), and
            // one fetch's worth, which librdkafka bounds by the prefetch anyway: 16 MB beside ATTEST_MAX_BUFFERED_BYTES.
            "queued.max.messages.kbytes": "16384", "fetch.max.bytes": "16777216",
            "statistics.interval.ms": statisticsIntervalMs,
        ]) { a, _ in a }.merging(configuration.kafkaProperties) { _, b in b }
        // A lane hands its batch's verdicts over at once: 1 ms lets them leave as one request, and a lone
        // verdict waits no longer (docs/SCALING.md: 0, one request per verdict, was no better at half load).
        let producerProperties = base.merging([
            "linger.ms": "1", "client.id": "attest-worker", "acks": "all", "statistics.interval.ms": statisticsIntervalMs,
        ]) { a, _ in a }
            .merging(configuration.kafkaProperties.filter { !KafkaProperties.consumerOnly.contains($0.key) }) { _, b in b }
        let service = try WorkerService(
            settings: WorkerService.Settings(
                topics: configuration.jobsTopics, consumerProperties: consumerProperties,
                producerProperties: producerProperties, batchSize: configuration.batchSize,
                maxBufferedMessages: configuration.maxBufferedMessages, maxBufferedBytes: configuration.maxBufferedBytes,
                messageLimits: .worker(maxMessageBytes: configuration.maxMessageBytes),
                pauseAfterSeconds: configuration.pauseAfterSeconds),
            processors: processors, clock: verifier.clock, logger: logger, metrics: metrics)

        let events = try EventPublisher(
            settings: EventPublisher.Settings(topic: configuration.eventsTopic), conninfo: configuration.databaseURL,
            producerProperties: producerProperties, clock: SystemClock(), registry: metrics.registry, logger: logger)

        // Receipt refresh runs beside the pipeline, never in it: off (and said so) without a DeviceCheck key.
        let receipts = ReceiptRefreshFactory.client(
            configuration.receiptClient, receiptAnchor: trust.receipt.chain.anchor, skewSeconds: configuration.maxFutureSkewSeconds
        ).map { client in
            ReceiptRefresher(
                settings: configuration.receiptRefresh, conninfo: configuration.databaseURL, refresher: client, clock: SystemClock(),
                registry: metrics.registry, readiness: metrics.readiness, logger: logger)
        }
        if receipts == nil { logger.info("receipt refresh off: no DeviceCheck key configured") }

        // HTTP first, so that /healthz answers and /readyz says what is missing while the rest starts; the
        // intake last. The group stops them in reverse: polling, lanes, consumer, producer, then the rest.
        let group = ServiceGroup(
            servers + [schema, DatabaseProbe(conninfo: configuration.databaseURL, health: database), purger, partitions, events]
                + (receipts.map { [$0] } ?? []) + (statusList.map { [$0] } ?? []) + service.services,
            shutdownTimeout: .seconds(configuration.shutdownTimeoutSeconds)
        ) { event in
            switch event {
            case .started(let name):
                logger.debug("started", [("component", .string(name))])
                if name == opsHTTP.name {
                    logger.info("http listening", [("port", .int(Int64(http.port ?? 0))), ("opsPort", .int(Int64(opsHTTP.port ?? 0)))])
                }
            case .stopping(let name): logger.debug("stopping", [("component", .string(name))])
            case .stopped(let name): logger.debug("stopped", [("component", .string(name))])
            case .failed(let name, let error):
                logger.error("component failed; stopping", [("component", .string(name)), ("error", .string("\(error)"))])
            }
        }
        let signals = [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                logger.info("signal received; stopping", [("signal", .int(Int64(number)))])
                group.triggerGracefulShutdown()
                // A start still waiting for PostgreSQL gives up instead of holding the shutdown.
                schemaConnection.cancel()
                connection.cancel()
            }
            source.resume()
            return source
        }
        defer { for source in signals { source.cancel() } }
        // A component that failed ends the process as a failed start does (one line, status 2), after the
        // others stopped; a shutdown past its deadline exits 1 without waiting more: what was stored is
        // safe, the rest is redelivered.
        do {
            try group.run()
            return 0
        } catch {
            switch error {
            case .shutdownTimedOut(let name):
                logger.error("shutdown deadline passed; exiting", [("component", .string(name))])
                return 1
            case .failed: throw error
            }
        }
    }
}
