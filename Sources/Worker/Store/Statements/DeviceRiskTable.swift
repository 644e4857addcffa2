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
        static let sql = """
            SELECT r.team_id, r.bundle_id, r.identity, r.device_id, r.attestations,
                (extract(epoch FROM r.last_attestation_at) * 1000000)::bigint AS last_attestation_at_us, r.keys,
                r.failed_attestations, r.failed_assertions, r.counter_replays,
                (extract(epoch FROM r.window_start) * 1000000)::bigint AS window_start_us, r.window_attestations,
                r.receipt_risk_metric, (extract(epoch FROM r.receipt_metric_at) * 1000000)::bigint AS receipt_metric_at_us,
                r.receipt_metric_growth, r.environment, r.score, r.factors::text AS factors,
                (extract(epoch FROM r.failure_window_start) * 1000000)::bigint AS failure_window_start_us
            FROM unnest($1::text[], $2::text[], $3::text[]) AS q(t, b, i)
                CROSS JOIN LATERAL (
                    SELECT * FROM device_risk WHERE team_id = q.t AND bundle_id = q.b AND identity = q.i LIMIT 1) r
            """
        let parameters: [PGValue]

        init(_ devices: [AppDevice]) {
            parameters = [
                .array(.text(devices.map(\.teamId))), .array(.text(devices.map(\.bundleId))),
                .array(.text(devices.map(\.identity.value))),
            ]
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
                let factors: String = try row.decode("factors")
                let score: Int = try row.decode("score")
                self.score = JSONValue.parse(Array(factors.utf8)).map { HeldScore(score: score, factors: $0) }
            }
        }
    }

    /// The decision's `device_risk` upsert, its history applied as increments (the SQL twin of
    /// `DeviceHistory.record`: failures add up within the failure window, and the first failure after it
    /// opens a new one), and a risk history row when the score changes; both only if the decision's verdict
    /// was stored by this transaction. One statement per decision that writes risk; the caller orders them
    /// by row (see `AttestStore.commit`), a row's own decisions in batch order, since a device's later
    /// decisions build on the row its earlier ones leave.
    struct Upsert: PGCommandStatement {
        static let sql: String = {
            let sameRow = "team_id = $2 AND bundle_id = $3 AND identity = $5"
            // The event counts a failure, and the failure window the row holds is still open at its receivedAt
            // (the twin of `DeviceHistory.failureWindowIsOpen`): a closed window's failures are replaced.
            let failed = "($9::int + $10::int + $11::int) > 0"
            let inWindow = "EXCLUDED.failure_window_start < r.failure_window_start + interval '\(DeviceHistory.failureWindowSeconds) seconds'"
            let failures = { (column: String) in
                "\(column) = CASE WHEN NOT \(failed) THEN r.\(column) WHEN \(inWindow) THEN r.\(column) + EXCLUDED.\(column) ELSE EXCLUDED.\(column) END"
            }
            return
                """
                WITH v AS (
                    SELECT 1 FROM verdicts WHERE team_id = $2 AND bundle_id = $3 AND job_id = $1 AND partition_at = $17::timestamptz
                        AND \(DeviceRiskTable.insertedHere)),
                h AS (
                    INSERT INTO device_risk_history (team_id, bundle_id, identity, job_id, score, category, factors, scored_at)
                    SELECT $2, $3, $5, $1, $14::int, $15, $16::jsonb, $4::timestamptz
                    WHERE EXISTS (SELECT 1 FROM v) AND $14::int IS DISTINCT FROM (SELECT score FROM device_risk WHERE \(sameRow))
                    RETURNING 1),
                r AS (
                    INSERT INTO device_risk AS r (team_id, bundle_id, identity, device_id, attestations, last_attestation_at,
                        keys, failed_attestations, failed_assertions, counter_replays, window_start, window_attestations,
                        receipt_risk_metric, environment, score, category, factors, updated_at, failure_window_start)
                    SELECT $2, $3, $5, $6, $7::int, CASE WHEN $7::int = 1 THEN $4::timestamptz END,
                        $8::int, $9::int, $10::int, $11::int, CASE WHEN $7::int = 1 THEN $4::timestamptz END,
                        $7::int, $13::int, $12, $14::int, $15, $16::jsonb, $4::timestamptz,
                        CASE WHEN \(failed) THEN $4::timestamptz END
                    WHERE EXISTS (SELECT 1 FROM v)
                    ON CONFLICT (team_id, bundle_id, identity) DO UPDATE SET
                        attestations = r.attestations + EXCLUDED.attestations,
                        last_attestation_at = greatest(r.last_attestation_at, EXCLUDED.last_attestation_at),
                        keys = r.keys + EXCLUDED.keys,
                        \(failures("failed_attestations")), \(failures("failed_assertions")), \(failures("counter_replays")),
                        failure_window_start = CASE WHEN NOT \(failed) OR \(inWindow) THEN r.failure_window_start
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
        }()
        let parameters: [PGValue]

        /// Nil when the decision writes no risk (no intelligence, or nothing to change: see
        /// `IntelligenceChange.writesRisk`).
        init?(_ d: Decision) {
            guard let c = d.intelligence, c.writesRisk, let receivedAt = d.receivedAt else { return nil }
            let e = c.event
            let flag = { (on: Bool) -> PGValue in .int(on ? 1 : 0) }
            parameters = [
                .text(d.jobId), .text(c.device.teamId), .text(c.device.bundleId), .text(receivedAt.rfc3339),
                .text(c.device.identity.value), .text(c.deviceId), flag(e.attested), flag(e.newKey),
                flag(e.failedAttestation), flag(e.failedAssertion), flag(e.counterReplay),
                e.environment.map { .text($0.rawValue) } ?? .null, e.receiptRiskMetric.map { .int(Int64($0)) } ?? .null,
                .int(Int64(c.assessment.score)), .text(c.riskCategory.rawValue), .json(c.assessment.factorsJSON.serialized()),
                .text(d.storedPartitionAt.rfc3339),
            ]
        }
    }
}

extension AppAttestEnvironment: PGDecodable {}
