import PostgresClient

extension AttestStore {
    /// The histories, monthly counts and quota states a batch decides with: one round trip whatever the
    /// batch size. Keys travel as parallel arrays and each is looked up through its table's primary key
    /// (a LATERAL subquery with LIMIT 1 cannot be turned into a join), so the cost follows the batch,
    /// never the tables' size, whatever plan a cached statement settles on.
    public func intelligence(_ query: IntelligenceQuery) throws(PGError) -> IntelligenceSnapshot {
        guard !query.isEmpty else { return IntelligenceSnapshot() }
        let (histories, counted, quotas) = try connection.run { c throws(PGError) in
            try c.pipeline(
                DeviceRiskTable.Histories(Array(query.devices)), MonthlyCountsTable.Counted(Array(query.counted)),
                MonthlyCountsTable.Quotas(Array(query.months)))
        }
        return Self.snapshot(histories, counted, quotas)
    }

    /// ``prefetch(jobs:keyIds:)`` and ``intelligence(_:)`` in one round trip: a batch's reads before
    /// deciding, the latency of one trip to PostgreSQL instead of two.
    public func prefetch(
        jobs: [ScopedJobId], keyIds: [[UInt8]], intelligence query: IntelligenceQuery
    ) throws(PGError) -> (verdicts: [ScopedJobId: StoredVerdict], devices: [[UInt8]: DeviceRecord], intelligence: IntelligenceSnapshot) {
        guard !query.isEmpty else {
            let (verdicts, devices) = try prefetch(jobs: jobs, keyIds: keyIds)
            return (verdicts, devices, IntelligenceSnapshot())
        }
        let (verdicts, devices, histories, counted, quotas) = try connection.run { c throws(PGError) in
            try c.pipeline(
                VerdictsTable.Stored(jobs: jobs), DevicesTable.ByKeys(keyIds: keyIds),
                DeviceRiskTable.Histories(Array(query.devices)), MonthlyCountsTable.Counted(Array(query.counted)),
                MonthlyCountsTable.Quotas(Array(query.months)))
        }
        return (
            Dictionary(verdicts.map { ($0.job, $0.verdict) }, uniquingKeysWith: { _, last in last }),
            Dictionary(devices.map { ($0.keyId, $0) }, uniquingKeysWith: { _, last in last }),
            Self.snapshot(histories, counted, quotas)
        )
    }

    private static func snapshot(
        _ histories: [DeviceRiskTable.Histories.Row], _ counted: [MonthlyDevice], _ quotas: [MonthlyCountsTable.Quotas.Row]
    ) -> IntelligenceSnapshot {
        var snapshot = IntelligenceSnapshot()
        for row in histories {
            snapshot.histories[row.device] = row.history
            if let score = row.score { snapshot.scores[row.device] = score }
        }
        snapshot.counted = Set(counted)
        for row in quotas { snapshot.quotas[row.month] = row.quota }
        return snapshot
    }
}
