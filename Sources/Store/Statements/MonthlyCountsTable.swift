import AttestCore
import AttestJobs
import DeviceIntelligence
import PostgresClient

/// The SQL of the monthly active device tables (`mad_devices`, `mad_totals`, `mad_quota_events`) and of
/// the billing view over them.
enum MonthlyCountsTable {
    /// Which of these devices are already counted in their app's month, each looked up by primary key.
    struct Counted: PGStatement {
        typealias Row = MonthlyDevice
        let counted: [MonthlyDevice]

        init(_ counted: [MonthlyDevice]) { self.counted = counted }

        var query: PGQuery {
            """
            SELECT m.team_id, m.bundle_id, to_char(m.month, 'YYYY-MM') AS month, m.identity
            FROM unnest(\(counted.map(\.month.teamId))::text[], \(counted.map(\.month.bundleId))::text[],
                \(counted.map(\.month.month))::text[], \(counted.map(\.identity.value))::text[]) AS q(t, b, m, i)
                CROSS JOIN LATERAL (
                    SELECT team_id, bundle_id, month, identity FROM mad_devices
                    WHERE team_id = q.t AND bundle_id = q.b AND month = to_date(q.m, 'YYYY-MM') AND identity = q.i
                    LIMIT 1) m
            """
        }
    }

    /// Each of these app months' count so far and when it reached the limit: one row per month asked
    /// for, a month nothing was counted in yet reading 0.
    struct Quotas: PGStatement {
        let months: [AppMonth]

        init(_ months: [AppMonth]) { self.months = months }

        var query: PGQuery {
            """
            SELECT q.t AS team_id, q.b AS bundle_id, q.m AS month, coalesce(t.devices, 0) AS devices,
                (extract(epoch FROM e.reached_at) * 1000000)::bigint AS limit_reached_at_us
            FROM unnest(\(months.map(\.teamId))::text[], \(months.map(\.bundleId))::text[], \(months.map(\.month))::text[]) AS q(t, b, m)
            LEFT JOIN LATERAL (
                SELECT devices FROM mad_totals
                WHERE team_id = q.t AND bundle_id = q.b AND month = to_date(q.m, 'YYYY-MM') LIMIT 1) t ON true
            LEFT JOIN LATERAL (
                SELECT reached_at FROM mad_quota_events
                WHERE team_id = q.t AND bundle_id = q.b AND month = to_date(q.m, 'YYYY-MM') AND threshold = 100
                LIMIT 1) e
                ON true
            """
        }

        struct Row: PGRowDecodable {
            let month: AppMonth
            let quota: MonthlyQuota

            init(row: PGRow) throws(PGError) {
                month = try AppMonth(row: row)
                let reached: Int64? = try row.decode("limit_reached_at_us")
                quota = MonthlyQuota(devices: try row.decode("devices"), limitReachedAt: reached.map(Timestamp.init(microseconds:)))
            }
        }

        /// Every month asked for has its row.
        func result(_ rows: PGDecodedRows<Row>) throws(PGError) -> [Row] { try rows.exactly(months.count) }
    }

    /// Counts the batch's newly active devices and returns the quota crossings that makes: insert-if-absent
    /// on (app, month, identity), the first of a device's stored decisions in batch order giving the row its
    /// job and key, only for decisions whose verdict this transaction stored; the rows inserted are added
    /// to `mad_totals` (app months in key order, so concurrent workers cannot deadlock on them), and the
    /// 80% and 100% crossings not recorded before are recorded.
    struct Count: PGStatement {
        typealias Row = QuotaCrossing
        let indices: [Int]
        let decisions: [Decision]

        /// `indices`: the decisions that count a device (`intelligence.countsAsActive`), in batch order.
        init(_ indices: [Int], of decisions: [Decision]) {
            self.indices = indices
            self.decisions = decisions
        }

        var query: PGQuery {
            let rows = indices.map { (decision: decisions[$0], change: decisions[$0].intelligence!) }
            return """
            WITH m AS (
                INSERT INTO mad_devices (team_id, bundle_id, month, identity, key_id, job_id, counted_at)
                SELECT DISTINCT ON (x.t, x.b, x.m, x.id) x.t, x.b, to_date(x.m, 'YYYY-MM'), x.id, x.key, x.job, x.at
                FROM unnest(\(indices.map { Int32($0) })::int4[], \(rows.map(\.decision.jobId))::text[],
                        \(rows.map(\.change.device.teamId))::text[], \(rows.map(\.change.device.bundleId))::text[],
                        \(rows.map(\.change.month))::text[], \(rows.map(\.change.device.identity.value))::text[],
                        \(rows.map(\.change.keyId))::bytea[], \(rows.map(\.decision.receivedAt))::timestamptz[],
                        \(rows.map(\.decision.storedPartitionAt))::timestamptz[]) AS x(i, job, t, b, m, id, key, at, pat)
                    CROSS JOIN LATERAL (
                        SELECT 1 FROM verdicts WHERE team_id = x.t AND bundle_id = x.b AND job_id = x.job AND partition_at = x.pat
                            AND \(unescaped: DeviceRiskTable.insertedHere)
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
            SELECT team_id, bundle_id, to_char(month, 'YYYY-MM') AS month, threshold, devices, mad_limit FROM c
            ORDER BY team_id, bundle_id, c.month, threshold
            """
        }
    }

    /// The billing view's rows, newest month first: one app or all, one month or the `recentMonths` up
    /// to the current one.
    struct Billing: PGStatement {
        typealias Row = MonthlyActiveDevices
        let teamId: String?
        let bundleId: String?
        let month: String?
        let recentMonths: Int

        var query: PGQuery {
            """
            SELECT team_id, bundle_id, month, devices FROM billing_mad_monthly
            WHERE (\(teamId)::text IS NULL OR team_id = \(teamId)) AND (\(bundleId)::text IS NULL OR bundle_id = \(bundleId))
                AND CASE WHEN \(month)::text IS NULL
                    THEN month >= to_char(date_trunc('month', now() AT TIME ZONE 'UTC') - make_interval(months => \(recentMonths)::int - 1), 'YYYY-MM')
                    ELSE month = \(month) END
            ORDER BY month DESC, team_id, bundle_id
            """
        }
    }
}

extension AppMonth: PGRowDecodable {
    /// From `team_id`, `bundle_id` and `month` ("YYYY-MM").
    public init(row: PGRow) throws(PGError) {
        self.init(teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id"), month: try row.decode("month"))
    }
}

extension MonthlyDevice: PGRowDecodable {
    public init(row: PGRow) throws(PGError) {
        self.init(month: try AppMonth(row: row), identity: DeviceIdentity(stored: try row.decode("identity")))
    }
}

extension QuotaCrossing: PGRowDecodable {
    public init(row: PGRow) throws(PGError) {
        self.init(
            teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id"), month: try row.decode("month"),
            threshold: try row.decode("threshold"), devices: try row.decode("devices"), limit: try row.decode("mad_limit"))
    }
}

extension MonthlyActiveDevices: PGRowDecodable {
    public init(row: PGRow) throws(PGError) {
        self.init(
            teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id"), month: try row.decode("month"),
            devices: try row.decode("devices"))
    }
}
