import AttestCore
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import PostgresClient

extension AttestStore {
    /// The histories, monthly counts and quota states a batch decides with: one round trip whatever the
    /// batch size. Keys travel as parallel arrays and each is looked up through its table's primary key
    /// (a LATERAL subquery with LIMIT 1 cannot be turned into a join), so the cost follows the batch,
    /// never the tables' size, whatever plan a cached statement settles on.
    public func intelligence(_ query: IntelligenceQuery) throws(PGError) -> IntelligenceSnapshot {
        guard !query.isEmpty else { return IntelligenceSnapshot() }
        let devices = Array(query.devices)
        let counted = Array(query.counted)
        let months = Array(query.months)
        let results = try connection.run { c throws(PGError) in
            try c.pipeline([
                (
                    """
                    SELECT r.team_id, r.bundle_id, r.identity, r.device_id, r.attestations,
                        (extract(epoch FROM r.last_attestation_at) * 1000000)::bigint, r.keys, r.failed_attestations,
                        r.failed_assertions, r.counter_replays, (extract(epoch FROM r.window_start) * 1000000)::bigint,
                        r.window_attestations, r.receipt_risk_metric, r.environment, r.score, r.factors::text,
                        (extract(epoch FROM r.failure_window_start) * 1000000)::bigint
                    FROM unnest($1::text[], $2::text[], $3::text[]) AS q(t, b, i)
                        CROSS JOIN LATERAL (
                            SELECT * FROM device_risk WHERE team_id = q.t AND bundle_id = q.b AND identity = q.i LIMIT 1) r
                    """,
                    [.array(.text(devices.map(\.teamId))), .array(.text(devices.map(\.bundleId))),
                     .array(.text(devices.map(\.identity.value)))]
                ),
                (
                    """
                    SELECT m.team_id, m.bundle_id, to_char(m.month, 'YYYY-MM'), m.identity
                    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS q(t, b, m, i)
                        CROSS JOIN LATERAL (
                            SELECT team_id, bundle_id, month, identity FROM mad_devices
                            WHERE team_id = q.t AND bundle_id = q.b AND month = to_date(q.m, 'YYYY-MM') AND identity = q.i
                            LIMIT 1) m
                    """,
                    [.array(.text(counted.map(\.month.teamId))), .array(.text(counted.map(\.month.bundleId))),
                     .array(.text(counted.map(\.month.month))), .array(.text(counted.map(\.identity.value)))]
                ),
                (
                    """
                    SELECT q.t, q.b, q.m, coalesce(t.devices, 0), (extract(epoch FROM e.reached_at) * 1000000)::bigint
                    FROM unnest($1::text[], $2::text[], $3::text[]) AS q(t, b, m)
                    LEFT JOIN LATERAL (
                        SELECT devices FROM mad_totals
                        WHERE team_id = q.t AND bundle_id = q.b AND month = to_date(q.m, 'YYYY-MM') LIMIT 1) t ON true
                    LEFT JOIN LATERAL (
                        SELECT reached_at FROM mad_quota_events
                        WHERE team_id = q.t AND bundle_id = q.b AND month = to_date(q.m, 'YYYY-MM') AND threshold = 100
                        LIMIT 1) e
                        ON true
                    """,
                    [.array(.text(months.map(\.teamId))), .array(.text(months.map(\.bundleId))),
                     .array(.text(months.map(\.month)))]
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
            history.failureWindowStart = h.int(r, 16).map(Timestamp.init(microseconds:))
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
