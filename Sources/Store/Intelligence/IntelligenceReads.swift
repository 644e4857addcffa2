import PostgresClient

extension AttestStore {
    /// The histories, monthly counts and quota states a batch decides with: one round trip whatever the
    /// batch size. Keys travel as parallel arrays and each is looked up through its table's primary key
    /// (a LATERAL subquery with LIMIT 1 cannot be turned into a join), so the cost follows the batch,
    /// never the tables' size, whatever plan a cached statement settles on.
    static func intelligence(_ query: IntelligenceQuery, on c: PGConnection) throws(PGError) -> IntelligenceSnapshot {
        guard !query.isEmpty else { return IntelligenceSnapshot() }
        let (histories, counted, quotas) = try c.pipeline(
            DeviceRiskTable.Histories(Array(query.devices)), MonthlyCountsTable.Counted(Array(query.counted)),
            MonthlyCountsTable.Quotas(Array(query.months)))
        return snapshot(histories, counted, quotas)
    }

    /// The snapshot the three intelligence statements read (here, and in a batch's gather).
    static func snapshot(
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
