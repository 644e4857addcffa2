import AttestCore
import AttestJobs
import AttestVerifier
import PostgresClient

extension AttestStore {
    /// The histories, monthly counts and quota states a batch decides with: one round trip whatever the
    /// batch size, keys passed as JSON arrays and joined on the tables' primary keys.
    public func intelligence(_ query: IntelligenceQuery) throws(PGError) -> IntelligenceSnapshot {
        guard !query.isEmpty else { return IntelligenceSnapshot() }
        let devices = JSONValue.array(query.devices.map { d in
            .object([("t", .string(d.teamId)), ("b", .string(d.bundleId)), ("i", .string(d.identity.value))])
        })
        let counted = JSONValue.array(query.counted.map { c in
            .object([
                ("t", .string(c.month.teamId)), ("b", .string(c.month.bundleId)), ("m", .string(c.month.month)),
                ("i", .string(c.identity.value)),
            ])
        })
        let months = JSONValue.array(query.months.map { m in
            .object([("t", .string(m.teamId)), ("b", .string(m.bundleId)), ("m", .string(m.month))])
        })
        let results = try connection.run { c throws(PGError) in
            try c.pipeline([
                (
                    """
                    SELECT r.team_id, r.bundle_id, r.identity, r.device_id, r.attestations,
                        (extract(epoch FROM r.last_attestation_at) * 1000000)::bigint, r.keys, r.failed_attestations,
                        r.failed_assertions, r.counter_replays, (extract(epoch FROM r.window_start) * 1000000)::bigint,
                        r.window_attestations, r.receipt_risk_metric, r.environment, r.score, r.factors::text
                    FROM device_risk r JOIN jsonb_to_recordset($1::jsonb) AS q(t text, b text, i text)
                        ON r.team_id = q.t AND r.bundle_id = q.b AND r.identity = q.i
                    """,
                    [.json(devices.serialized())]
                ),
                (
                    """
                    SELECT m.team_id, m.bundle_id, to_char(m.month, 'YYYY-MM'), m.identity
                    FROM mad_devices m JOIN jsonb_to_recordset($1::jsonb) AS q(t text, b text, m text, i text)
                        ON m.team_id = q.t AND m.bundle_id = q.b AND m.month = to_date(q.m, 'YYYY-MM') AND m.identity = q.i
                    """,
                    [.json(counted.serialized())]
                ),
                (
                    """
                    SELECT q.t, q.b, q.m, coalesce(t.devices, 0), (extract(epoch FROM e.reached_at) * 1000000)::bigint
                    FROM jsonb_to_recordset($1::jsonb) AS q(t text, b text, m text)
                    LEFT JOIN mad_totals t ON t.team_id = q.t AND t.bundle_id = q.b AND t.month = to_date(q.m, 'YYYY-MM')
                    LEFT JOIN mad_quota_events e ON e.team_id = q.t AND e.bundle_id = q.b
                        AND e.month = to_date(q.m, 'YYYY-MM') AND e.threshold = 100
                    """,
                    [.json(months.serialized())]
                ),
            ])
        }
        var snapshot = IntelligenceSnapshot()
        let h = results[0]
        for r in 0..<h.count {
            var history = DeviceHistory()
            history.deviceId = h.string(r, 3)
            history.attestations = Int(h.int(r, 4) ?? 0)
            history.lastAttestationAt = h.int(r, 5).map(Timestamp.init(microseconds:))
            history.keys = Int(h.int(r, 6) ?? 0)
            history.failedAttestations = Int(h.int(r, 7) ?? 0)
            history.failedAssertions = Int(h.int(r, 8) ?? 0)
            history.counterReplays = Int(h.int(r, 9) ?? 0)
            history.windowStart = h.int(r, 10).map(Timestamp.init(microseconds:))
            history.windowAttestations = Int(h.int(r, 11) ?? 0)
            history.receiptRiskMetric = h.int(r, 12).map(Int.init)
            history.environment = h.string(r, 13).flatMap(AppAttestEnvironment.init(rawValue:))
            let device = AppDevice(
                teamId: h.string(r, 0) ?? "", bundleId: h.string(r, 1) ?? "", identity: DeviceIdentity(stored: h.string(r, 2) ?? ""))
            snapshot.histories[device] = history
            if let score = h.int(r, 14), let factors = h.string(r, 15).flatMap({ JSONValue.parse(Array($0.utf8)) }) {
                snapshot.scores[device] = HeldScore(score: Int(score), factors: factors)
            }
        }
        let m = results[1]
        for r in 0..<m.count {
            let month = AppMonth(teamId: m.string(r, 0) ?? "", bundleId: m.string(r, 1) ?? "", month: m.string(r, 2) ?? "")
            snapshot.counted.insert(MonthlyDevice(month: month, identity: DeviceIdentity(stored: m.string(r, 3) ?? "")))
        }
        let q = results[2]
        for r in 0..<q.count {
            let month = AppMonth(teamId: q.string(r, 0) ?? "", bundleId: q.string(r, 1) ?? "", month: q.string(r, 2) ?? "")
            snapshot.quotas[month] = MonthlyQuota(
                devices: Int(q.int(r, 3) ?? 0), limitReachedAt: q.int(r, 4).map(Timestamp.init(microseconds:)))
        }
        return snapshot
    }
}
