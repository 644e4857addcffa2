import DeviceIntelligence
import PostgresClient

/// How a batch's `IntelligenceChange`s join its commit, after its verdicts and inside its transaction:
/// the risk rows that change (``DeviceRiskTable/Upserts``), then the month's counts
/// (``MonthlyCountsTable/Count``), each with the events outbox rows it causes (``EventsTable``). Each
/// write is conditioned on its decision's verdict having been stored by this transaction, so a
/// redelivered job (whose verdict already exists) neither counts its device again nor moves its history
/// nor writes its events again.
enum IntelligenceWrites {
    /// Appends the batch's intelligence writes to `pipeline`: the risk rows in rounds, each one set-based
    /// statement (and its category changes) over distinct devices in (app, identity) order so two workers
    /// cannot deadlock on them: every device's first write, then the second of those that have two, …, so a
    /// device's later decisions build on the row its earlier ones leave, in batch order. Most batches are
    /// one round: a few statements whatever their size. Returns where the quota crossings are read, nil when
    /// no decision counts a device.
    static func append(_ decisions: [Decision], to pipeline: inout PGPipeline) -> PGPipeline.Handle<[QuotaCrossing]>? {
        let scored = decisions.indices.filter { DeviceRiskTable.Upserts.writes(decisions[$0]) }.sorted { a, b in
            let (x, y) = (decisions[a].intelligence!.device, decisions[b].intelligence!.device)
            let keys = ((x.teamId, x.bundleId, x.identity.value), (y.teamId, y.bundleId, y.identity.value))
            return keys.0 == keys.1 ? a < b : keys.0 < keys.1
        }
        for round in writeRounds(scored, row: { decisions[$0].intelligence!.device }) {
            let round = round.map { decisions[$0] }
            pipeline.append(EventsTable.RiskCategoryChanges(round))
            pipeline.append(DeviceRiskTable.Upserts(round))
        }
        let counted = decisions.indices.filter { decisions[$0].intelligence?.countsAsActive == true }
        guard !counted.isEmpty else { return nil }
        let crossings = pipeline.append(MonthlyCountsTable.Count(counted, of: decisions))
        // The events outbox: the crossings that count just recorded.
        let months = counted.compactMap { decisions[$0].intelligence }.map {
            AppMonth(teamId: $0.device.teamId, bundleId: $0.device.bundleId, month: $0.month)
        }
        pipeline.append(EventsTable.QuotaCrossings(months))
        return crossings
    }
}
