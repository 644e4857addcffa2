import AttestCore
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import PostgresClient

/// The SQL that stores the batch's `IntelligenceChange`s inside its transaction, after its verdicts, and
/// its monthly counts. Each write is conditioned on its decision's verdict having been stored by
/// this transaction (the row's `xmin`), so a redelivered job (whose verdict already exists) neither
/// counts its device again nor moves its history.
enum IntelligenceWrites {
    /// A `verdicts` row this transaction inserted (rather than one stored before it).
    private static let insertedHere = "xmin = pg_current_xact_id()::xid"

    /// The decision's `device_risk` upsert, its history applied as increments (the SQL twin of
    /// `DeviceHistory.record`: failures add up within the failure window, and the first failure after it
    /// opens a new one), and a risk history row when the score changes; nil when the decision
    /// writes no risk (no intelligence, or nothing to change: see `IntelligenceChange.writesRisk`).
    /// One statement per such decision; the caller orders them by row (see `AttestStore.commit`), a row's
    /// own decisions in batch order, since a device's later decisions build on the row its earlier ones
    /// leave.
    static func risk(_ d: Decision) -> (sql: String, params: [PGValue])? {
        guard let c = d.intelligence, c.writesRisk, let receivedAt = d.receivedAt else { return nil }
        let e = c.event
        let flag = { (on: Bool) -> PGValue in .int(on ? 1 : 0) }
        let params: [PGValue] = [
            .text(d.jobId), .text(c.device.teamId), .text(c.device.bundleId), .text(receivedAt.rfc3339),
            .text(c.device.identity.value), .text(c.deviceId), flag(e.attested), flag(e.newKey),
            flag(e.failedAttestation), flag(e.failedAssertion), flag(e.counterReplay),
            e.environment.map { .text($0.rawValue) } ?? .null, e.receiptRiskMetric.map { .int(Int64($0)) } ?? .null,
            .int(Int64(c.assessment.score)), .text(c.riskCategory.rawValue), .json(c.assessment.factorsJSON.serialized()),
        ]
        let sameRow = "team_id = $2 AND bundle_id = $3 AND identity = $5"
        // The event counts a failure, and the failure window the row holds is still open at its receivedAt
        // (the twin of `DeviceHistory.failureWindowIsOpen`): a closed window's failures are replaced.
        let failed = "($9::int + $10::int + $11::int) > 0"
        let inWindow = "EXCLUDED.failure_window_start < r.failure_window_start + interval '\(DeviceHistory.failureWindowSeconds) seconds'"
        let failures = { (column: String) in
            "\(column) = CASE WHEN NOT \(failed) THEN r.\(column) WHEN \(inWindow) THEN r.\(column) + EXCLUDED.\(column) ELSE EXCLUDED.\(column) END"
        }
        return (
            """
            WITH v AS (SELECT 1 FROM verdicts WHERE team_id = $2 AND bundle_id = $3 AND job_id = $1 AND \(insertedHere)),
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
            """,
            params
        )
    }

    /// Counts the batch's newly active devices and returns the quota crossings that makes: insert-if-absent
    /// on (app, month, identity), the first of a device's stored decisions in batch order giving the row its
    /// job and key; the rows inserted are added to `mad_totals` (app months in key order, so concurrent
    /// workers cannot deadlock on them), and the 80% and 100% crossings not recorded before are recorded.
    static func count(_ indices: [Int], of decisions: [Decision]) -> (sql: String, params: [PGValue]) {
        let rows = indices.map { (decision: decisions[$0], change: decisions[$0].intelligence!) }
        let columns: [PGArray] = [
            .int4(indices.map { Int32($0) }), .text(rows.map(\.decision.jobId)), .text(rows.map(\.change.device.teamId)),
            .text(rows.map(\.change.device.bundleId)), .text(rows.map(\.change.month)),
            .text(rows.map(\.change.device.identity.value)), .bytea(rows.map(\.change.keyId)),
            .timestamptz(unixMicroseconds: rows.map { $0.decision.receivedAt?.microseconds }),
        ]
        return (
            """
            WITH m AS (
                INSERT INTO mad_devices (team_id, bundle_id, month, identity, key_id, job_id, counted_at)
                SELECT DISTINCT ON (x.t, x.b, x.m, x.id) x.t, x.b, to_date(x.m, 'YYYY-MM'), x.id, x.key, x.job, x.at
                FROM unnest($1::int4[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[],
                        $8::timestamptz[]) AS x(i, job, t, b, m, id, key, at)
                    CROSS JOIN LATERAL (
                        SELECT 1 FROM verdicts WHERE team_id = x.t AND bundle_id = x.b AND job_id = x.job AND \(insertedHere)
                        LIMIT 1) v
                ORDER BY x.t, x.b, x.m, x.id, x.i
                ON CONFLICT DO NOTHING
                RETURNING team_id, bundle_id, month, counted_at),
            n AS (
                SELECT team_id, bundle_id, month, count(*)::int AS added, max(counted_at) AS last_at
                FROM m GROUP BY team_id, bundle_id, month),
            t AS (
                INSERT INTO mad_totals AS mt (team_id, bundle_id, month, devices)
                SELECT team_id, bundle_id, month, added FROM n ORDER BY team_id, bundle_id, month
                ON CONFLICT (team_id, bundle_id, month) DO UPDATE SET devices = mt.devices + EXCLUDED.devices
                RETURNING team_id, bundle_id, month, devices),
            c AS (
                INSERT INTO mad_quota_events (team_id, bundle_id, month, threshold, devices, mad_limit, reached_at)
                SELECT t.team_id, t.bundle_id, t.month, th.threshold, t.devices, a.mad_limit, n.last_at
                FROM t JOIN n USING (team_id, bundle_id, month) JOIN apps a USING (team_id, bundle_id)
                    CROSS JOIN (VALUES (80), (100)) AS th(threshold)
                WHERE a.mad_limit IS NOT NULL AND t.devices::bigint * 100 >= a.mad_limit::bigint * th.threshold
                ORDER BY t.team_id, t.bundle_id, t.month, th.threshold
                ON CONFLICT DO NOTHING
                RETURNING team_id, bundle_id, month, threshold, devices, mad_limit)
            SELECT team_id, bundle_id, to_char(month, 'YYYY-MM'), threshold, devices, mad_limit FROM c
            ORDER BY team_id, bundle_id, month, threshold
            """,
            columns.map(PGValue.array)
        )
    }

    static func crossings(_ rows: PGRows) -> [QuotaCrossing] {
        (0..<rows.count).map { r in
            QuotaCrossing(
                teamId: rows.string(r, 0) ?? "", bundleId: rows.string(r, 1) ?? "", month: rows.string(r, 2) ?? "",
                threshold: Int(rows.int(r, 3) ?? 0), devices: Int(rows.int(r, 4) ?? 0), limit: Int(rows.int(r, 5) ?? 0))
        }
    }
}
