import AttestCore
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import PostgresClient

/// The SQL of `device_risk` and `device_risk_history`: the histories a batch decides with, and the
/// decision's history and score it stores.
enum DeviceRiskTable {
    /// A `verdicts` row this transaction inserted (rather than one stored before it): the writes of
    /// intelligence follow their decision's verdict, so a redelivered job moves nothing. The statements
    /// using it also name the verdict's `partition_at` (the decision's `storedPartitionAt`, which is what it
    /// was inserted under), so PostgreSQL probes that one partition, not every attached one.
    static let insertedHere = "xmin = pg_current_xact_id()::xid"

    /// The histories and held scores of these devices, each looked up by primary key.
    struct Histories: PGStatement {
        let devices: [AppDevice]

        init(_ devices: [AppDevice]) { self.devices = devices }

        var query: PGQuery {
            """
            SELECT r.team_id, r.bundle_id, r.identity, r.device_id, r.attestations,
                (extract(epoch FROM r.last_attestation_at) * 1000000)::bigint AS last_attestation_at_us, r.keys,
                r.failed_attestations, r.failed_assertions, r.counter_replays,
                (extract(epoch FROM r.window_start) * 1000000)::bigint AS window_start_us, r.window_attestations,
                r.receipt_risk_metric, (extract(epoch FROM r.receipt_metric_at) * 1000000)::bigint AS receipt_metric_at_us,
                r.receipt_metric_growth, r.environment, r.score, r.factors::text AS factors,
                (extract(epoch FROM r.failure_window_start) * 1000000)::bigint AS failure_window_start_us
            FROM unnest(\(devices.map(\.teamId))::text[], \(devices.map(\.bundleId))::text[], \(devices.map(\.identity.value))::text[])
                AS q(t, b, i)
                CROSS JOIN LATERAL (
                    SELECT * FROM device_risk WHERE team_id = q.t AND bundle_id = q.b AND identity = q.i LIMIT 1) r
            """
        }

        struct Row: PGRowDecodable {
            let device: AppDevice
            let history: DeviceHistory
            /// Nil when the stored factors no longer parse: the device is then scored afresh.
            let score: HeldScore?

            init(row: PGRow) throws(PGError) {
                device = AppDevice(
                    teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id"),
                    identity: DeviceIdentity(stored: try row.decode("identity")))
                var history = DeviceHistory()
                history.deviceId = try row.decode("device_id")
                history.attestations = try row.decode("attestations")
                history.lastAttestationAt = (try row.decode("last_attestation_at_us") as Int64?).map(Timestamp.init(microseconds:))
                history.keys = try row.decode("keys")
                history.failedAttestations = try row.decode("failed_attestations")
                history.failedAssertions = try row.decode("failed_assertions")
                history.counterReplays = try row.decode("counter_replays")
                history.failureWindowStart = (try row.decode("failure_window_start_us") as Int64?).map(Timestamp.init(microseconds:))
                history.windowStart = (try row.decode("window_start_us") as Int64?).map(Timestamp.init(microseconds:))
                history.windowAttestations = try row.decode("window_attestations")
                history.receiptRiskMetric = try row.decode("receipt_risk_metric")
                history.receiptRiskMetricAt = (try row.decode("receipt_metric_at_us") as Int64?).map(Timestamp.init(microseconds:))
                history.receiptRiskMetricGrowth = try row.decode("receipt_metric_growth")
                history.environment = try row.decode("environment")
                self.history = history
                let score: Int = try row.decode("score")
                self.score = try row.decodeJSON("factors") { HeldScore(score: score, factors: $0) }
            }
        }
    }

    /// The `device_risk` upserts of decisions of distinct devices (a batch's round: each device's first
    /// write, then its second, …), each decision's history applied as increments (the SQL twin of
    /// `DeviceHistory.record`: failures add up within the failure window, and the first failure after it
    /// opens a new one), and a risk history row where the score changes; each only if its decision's
    /// verdict was stored by this transaction. One statement per round, its rows in (app, identity) order
    /// so two workers cannot deadlock on them; a device's later decisions, in later rounds, build on the row
    /// its earlier ones leave. The history row compares with the row as the statement found it (its CTEs
    /// share one snapshot), before this round's upsert.
    struct Upserts: PGCommandStatement {
        let decisions: [Decision]

        /// - Precondition: every decision writes risk (``writes(_:)``), and no two are of one device.
        init(_ decisions: [Decision]) { self.decisions = decisions }

        // The event counts a failure, and the failure window the row holds is still open at its receivedAt
        // (the twin of `DeviceHistory.failureWindowIsOpen`): a closed window's failures are replaced.
        private static let failed = "(EXCLUDED.failed_attestations + EXCLUDED.failed_assertions + EXCLUDED.counter_replays) > 0"
        private static let inWindow =
            "EXCLUDED.failure_window_start < r.failure_window_start + interval '\(DeviceHistory.failureWindowSeconds) seconds'"
        private static func failures(_ column: String) -> String {
            "\(column) = CASE WHEN NOT \(failed) THEN r.\(column) WHEN \(inWindow) THEN r.\(column) + EXCLUDED.\(column) ELSE EXCLUDED.\(column) END"
        }

        var query: PGQuery {
            let c = decisions.map { $0.intelligence! }
            let flag = { (on: Bool) -> Int32? in on ? 1 : 0 }
            return
                """
                WITH x AS (
                    SELECT * FROM unnest(\(decisions.map(\.jobId))::text[], \(c.map(\.device.teamId))::text[],
                        \(c.map(\.device.bundleId))::text[], \(decisions.map { $0.receivedAt! })::timestamptz[],
                        \(c.map(\.device.identity.value))::text[], \(c.map(\.deviceId))::text[], \(c.map { flag($0.event.attested) })::int4[],
                        \(c.map { flag($0.event.newKey) })::int4[], \(c.map { flag($0.event.failedAttestation) })::int4[],
                        \(c.map { flag($0.event.failedAssertion) })::int4[], \(c.map { flag($0.event.counterReplay) })::int4[],
                        \(c.map { $0.event.environment?.rawValue })::text[],
                        \(c.map { $0.event.receiptRiskMetric.map { Int32(clamping: $0) } })::int4[],
                        \(c.map { Int32(clamping: $0.assessment.score) })::int4[], \(c.map(\.riskCategory.rawValue))::text[],
                        \(c.map { $0.assessment.factorsJSON.serialized() })::text[], \(decisions.map(\.storedPartitionAt))::timestamptz[])
                        AS x(job, team, bundle, received, identity, device_id, attested, new_key, failed_attestation, failed_assertion,
                            counter_replay, environment, metric, score, category, factors, pat)),
                v AS (
                    SELECT x.* FROM x WHERE EXISTS (
                        SELECT 1 FROM verdicts WHERE team_id = x.team AND bundle_id = x.bundle AND job_id = x.job
                            AND partition_at = x.pat AND \(unescaped: DeviceRiskTable.insertedHere))),
                h AS (
                    INSERT INTO device_risk_history (team_id, bundle_id, identity, job_id, score, category, factors, scored_at)
                    SELECT v.team, v.bundle, v.identity, v.job, v.score, v.category, v.factors::jsonb, v.received FROM v
                    WHERE v.score IS DISTINCT FROM (
                        SELECT d.score FROM device_risk d WHERE d.team_id = v.team AND d.bundle_id = v.bundle AND d.identity = v.identity)
                    RETURNING 1),
                r AS (
                    INSERT INTO device_risk AS r (team_id, bundle_id, identity, device_id, attestations, last_attestation_at,
                        keys, failed_attestations, failed_assertions, counter_replays, window_start, window_attestations,
                        receipt_risk_metric, environment, score, category, factors, updated_at, failure_window_start)
                    SELECT v.team, v.bundle, v.identity, v.device_id, v.attested, CASE WHEN v.attested = 1 THEN v.received END,
                        v.new_key, v.failed_attestation, v.failed_assertion, v.counter_replay, CASE WHEN v.attested = 1 THEN v.received END,
                        v.attested, v.metric, v.environment, v.score, v.category, v.factors::jsonb, v.received,
                        CASE WHEN v.failed_attestation + v.failed_assertion + v.counter_replay > 0 THEN v.received END
                    FROM v ORDER BY v.team, v.bundle, v.identity
                    ON CONFLICT (team_id, bundle_id, identity) DO UPDATE SET
                        attestations = r.attestations + EXCLUDED.attestations,
                        last_attestation_at = greatest(r.last_attestation_at, EXCLUDED.last_attestation_at),
                        keys = r.keys + EXCLUDED.keys,
                        \(unescaped: Self.failures("failed_attestations")), \(unescaped: Self.failures("failed_assertions")),
                        \(unescaped: Self.failures("counter_replays")),
                        failure_window_start = CASE WHEN NOT \(unescaped: Self.failed) OR \(unescaped: Self.inWindow) THEN r.failure_window_start
                            ELSE EXCLUDED.failure_window_start END,
                        window_start = CASE WHEN EXCLUDED.attestations = 0 THEN r.window_start
                            WHEN EXCLUDED.window_start < r.window_start + interval '24 hours' THEN r.window_start
                            ELSE EXCLUDED.window_start END,
                        window_attestations = CASE WHEN EXCLUDED.attestations = 0 THEN r.window_attestations
                            WHEN EXCLUDED.window_start < r.window_start + interval '24 hours' THEN r.window_attestations + 1
                            ELSE 1 END,
                        receipt_risk_metric = coalesce(EXCLUDED.receipt_risk_metric, r.receipt_risk_metric),
                        environment = coalesce(EXCLUDED.environment, r.environment),
                        score = EXCLUDED.score, category = EXCLUDED.category, factors = EXCLUDED.factors,
                        updated_at = greatest(r.updated_at, EXCLUDED.updated_at)
                    RETURNING 1)
                SELECT (SELECT count(*) FROM r)::int
                """
        }

        /// Whether `d` writes risk: its job could be read and its intelligence changes the row
        /// (`IntelligenceChange.writesRisk`).
        static func writes(_ d: Decision) -> Bool { d.intelligence?.writesRisk == true && d.receivedAt != nil }
    }
}

extension AppAttestEnvironment: PGDecodable {}
