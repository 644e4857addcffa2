import AttestJobs
import KafkaClient
import Observability
import Synchronization

/// The worker's metrics (bounded labels only: kinds, codes, reasons, components, partitions) and its
/// readiness conditions, created once and shared by the pipeline's parts.
public final class WorkerMetrics: Sendable {
    public let registry = MetricsRegistry()
    public let readiness = Readiness.Conditions()
    /// The `postgres` condition as the writers and the probe see it, and the database retries.
    public let database: DatabaseHealth

    let consumed: Counter
    let verdicts: Counter
    let republished: Counter
    let jobIdReused: Counter
    let deadLetters: Counter
    let batchSize: Histogram
    let batchSeconds: Histogram
    let batchDatabaseSeconds: Histogram
    let receivedToVerdict: Histogram
    /// `attest_verification_seconds`' series by job kind, looked up once: every job's checks are timed.
    private let verificationSeries: [Job.Kind: Histogram.Series]
    let stageSeconds: Histogram
    /// `stageSeconds`' series by ``JobStage``, looked up once: the stages are timed for every job.
    private let stageSeries: [Histogram.Series]
    let errors: Counter
    let publishRetries: Counter
    let publishRefused: Counter
    let repliesRefused: Counter
    let inFlight: Gauge
    let lag: Gauge
    /// The partitions `lag` was last set for: a partition this member gave up reads 0 from then on.
    private let lagged = Mutex<Set<TopicPartition>>([])
    let issuerCache: Counter
    let quotaThresholds: Counter
    private let lastCacheCounts = Mutex<[String: Int]>([:])
    let kafkaRequests: Counter
    /// The cumulative counts `kafkaRequests` was last brought to, per client.
    private let lastRequests = Mutex<[String: BrokerRequests]>([:])

    /// The series of one kind of `attest_verification_seconds`.
    func verification(_ kind: Job.Kind) -> Histogram.Series { verificationSeries[kind]! }

    /// The series of one stage of `attest_job_stage_seconds`.
    func stage(_ stage: JobStage) -> Histogram.Series { stageSeries[stage.rawValue] }

    public init() {
        consumed = registry.counter("attest_jobs_consumed_total", help: "Messages consumed from the job topics.", labelNames: ["topic"])
        verdicts = registry.counter(
            "attest_verdicts_total", help: "Decisions stored, by job kind, code and reason (ok for accepted).",
            labelNames: ["kind", "code", "reason"])
        republished = registry.counter(
            "attest_verdicts_republished_total", help: "Redelivered jobs answered with their stored verdict.")
        jobIdReused = registry.counter(
            "attest_job_id_reused_total",
            help: "Messages reusing a decided jobId of their app with other content: answered job_id_reused, and reported.")
        deadLetters = registry.counter("attest_dead_letters_total", help: "Messages that were not jobs.", labelNames: ["reason"])
        batchSize = registry.histogram(
            "attest_batch_size", help: "Messages per batch.", buckets: Histogram.exponentialBuckets(start: 1, factor: 2, count: 11))
        batchSeconds = registry.histogram(
            "attest_batch_seconds", help: "Time to decide and store one batch (verification included).")
        // What volume breaks first is the database: its share of a batch, apart from verification.
        batchDatabaseSeconds = registry.histogram(
            "attest_batch_database_seconds",
            help: "Time one batch spent in PostgreSQL: its reads, challenge settling and commits, reconnection retries included.",
            buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30])
        receivedToVerdict = registry.histogram(
            "attest_received_to_verdict_seconds", help: "From the job's receivedAt to its stored verdict.",
            buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300])
        let verificationSeconds = registry.histogram(
            "attest_verification_seconds", help: "Time to verify one job (the core's checks), by kind.", labelNames: ["kind"],
            buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25])
        verificationSeries = Dictionary(uniqueKeysWithValues: Job.Kind.allCases.map { [verificationSeconds] in
            ($0, verificationSeconds.labels([$0.rawValue]))
        })
        // Per job, so that quantiles over the series are a job's, not a batch's; the benchmark diffs the
        // buckets around its latency phase (issue 14: find the tail by stage, not by guess).
        stageSeconds = registry.histogram(
            "attest_job_stage_seconds",
            help: "A job's time per stage: broker (created → consumed), buffer (consumed → its batch starts), "
                + "reading, deciding and storing (its batch's reads, the rest of the batch, its commits), "
                + "publish (verdict handed to the producer → acknowledged).",
            labelNames: ["stage"],
            buckets: [0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2, 5, 10])
        stageSeries = JobStage.allCases.map { [stageSeconds] in stageSeconds.labels([$0.label]) }
        errors = registry.counter("attest_errors_total", help: "Database and producer errors.", labelNames: ["component"])
        database = DatabaseHealth(
            readiness: readiness,
            retries: registry.counter(
                "attest_db_retries_total",
                help: "Transient database failures retried, by SQLSTATE class (connection: lost or refused without one).",
                labelNames: ["class"]))
        publishRetries = registry.counter(
            "attest_publish_retries_total", help: "Publications tried again (full local queue, failed delivery), by error.",
            labelNames: ["error"])
        publishRefused = registry.counter(
            "attest_publish_refused_total",
            help: "Messages the broker refused for good (too large, invalid), replaced by their smallest dead letter.",
            labelNames: ["error"])
        repliesRefused = registry.counter(
            "attest_replies_refused_total",
            help: "Verdict replies not sent: reply-to not allowed or malformed, one reply topic too many, or refused by the broker (no such topic or partition).",
            labelNames: ["reason"])
        inFlight = registry.gauge("attest_jobs_in_flight", help: "Messages consumed and not yet acknowledged.")
        // Bounded by the partitions of the job topics (series are never removed: a revoked one is set to 0).
        lag = registry.gauge(
            "attest_consumer_lag_messages",
            help: "Messages of an assigned partition not yet finished: its high watermark minus the offset stored for the next commit.",
            labelNames: ["topic", "partition"], maxSeries: 4096)
        // Bounded by the clients (2) × librdkafka's request names (about seventy).
        kafkaRequests = registry.counter(
            "attest_kafka_requests_total",
            help: "Requests the worker's Kafka clients sent to the brokers, by client (consumer, producer) and request (Fetch, Produce, …).",
            labelNames: ["client", "request"], maxSeries: 512)
        issuerCache = registry.counter(
            "attest_issuer_cache_lookups_total", help: "Verified-issuer cache lookups (intermediates, receipt signers).",
            labelNames: ["cache", "result"])
        quotaThresholds = registry.counter(
            "attest_mad_quota_thresholds_total",
            help: "Apps' months crossing 80% or 100% of their monthly active device limit (each recorded once).",
            labelNames: ["threshold"])
        // What /readyz answers, as a series alerts can watch (a scrape only needs the process, not readiness).
        let ready = registry.gauge("attest_ready", help: "1 when every readiness condition holds (/readyz is 200), else 0.")
        // Which condition is unmet and why: 1 for each current reason, 0 for those seen before (a bounded set:
        // conditions × reason labels).
        let unmet = registry.gauge(
            "attest_readiness_unmet", help: "1 for each readiness condition that does not hold, by its reason (/readyz says it in words).",
            labelNames: ["condition", "reason"])
        let seen = Mutex<Set<[String]>>([])
        registry.onCollect { [readiness] in
            let current = Set(readiness.unmet.map { [$0.condition.name, $0.reason.label] })
            ready.set(current.isEmpty ? 1 : 0)
            for labels in seen.withLock({ seen in seen.formUnion(current); return seen }) {
                unmet.labels(labels).set(current.contains(labels) ? 1 : 0)
            }
        }
    }

    /// Sets the lag of the partitions this member owns (``KafkaConsumer/storedLag()``), and 0 for those it
    /// reported before and no longer owns (their new owner reports them; series cannot be removed, and a
    /// stale figure would keep an alert firing). At scrape time.
    public func recordLag(_ current: [TopicPartition: Int64]) {
        let gone = lagged.withLock { lagged in
            defer { lagged = Set(current.keys) }
            return lagged.subtracting(current.keys)
        }
        for partition in gone { lag.labels([partition.topic, String(partition.partition)]).set(0) }
        for (partition, behind) in current { lag.labels([partition.topic, String(partition.partition)]).set(Double(behind)) }
    }

    /// Copies cumulative cache counts into the counter (by difference), at scrape time.
    public func recordCache(_ name: String, hits: Int, misses: Int) {
        let deltas = lastCacheCounts.withLock { last -> (Int, Int) in
            defer { last[name + ".hit"] = hits; last[name + ".miss"] = misses }
            return (hits - (last[name + ".hit"] ?? 0), misses - (last[name + ".miss"] ?? 0))
        }
        issuerCache.labels([name, "hit"]).increment(by: Double(deltas.0))
        issuerCache.labels([name, "miss"]).increment(by: Double(deltas.1))
    }

    /// Brings `attest_kafka_requests_total` of `client` up to its cumulative counts (librdkafka's
    /// statistics), by difference, at scrape time.
    public func recordRequests(client: String, _ counts: BrokerRequests) {
        let sent = lastRequests.withLock { last in
            defer { last[client] = counts }
            return counts.since(last[client] ?? BrokerRequests())
        }
        for (request, count) in sent.counts { kafkaRequests.labels([client, request]).increment(by: Double(count)) }
    }
}
