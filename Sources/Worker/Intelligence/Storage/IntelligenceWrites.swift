import DeviceIntelligence
import PostgresClient

/// How a batch's `IntelligenceChange`s join its commit, after its verdicts and inside its transaction:
/// the risk rows that change (``DeviceRiskTable/Upsert``), then the month's counts
/// (``MonthlyCountsTable/Count``), each with the events outbox rows it causes (``EventsTable``). Each
/// write is conditioned on its decision's verdict having been stored by this transaction, so a
/// redelivered job (whose verdict already exists) neither counts its device again nor moves its history
/// nor writes its events again.
enum IntelligenceWrites {
    /// Appends the batch's intelligence writes to `pipeline`: risk rows in (app, identity) order so two
    /// workers cannot deadlock on them, a row's own decisions in batch order since a device's later
    /// decisions build on the row its earlier ones leave. Returns where the quota crossings are read,
    /// nil when no decision counts a device.
    static func append(_ decisions: [Decision], to pipeline: inout PGPipeline) -> PGPipeline.Handle<[QuotaCrossing]>? {
        let scored = decisions.indices.sorted { a, b in
            let (x, y) = (decisions[a].intelligence?.device, decisions[b].intelligence?.device)
            let keys = ((x?.teamId ?? "", x?.bundleId ?? "", x?.identity.value ?? ""), (y?.teamId ?? "", y?.bundleId ?? "", y?.identity.value ?? ""))
            return keys.0 == keys.1 ? a < b : keys.0 < keys.1
        }
        for index in scored {
            guard let upsert = DeviceRiskTable.Upsert(decisions[index]) else { continue }
            // The events outbox: a category change this decision makes, read before its upsert moves the row.
            if let change = EventsTable.RiskCategoryChange(decisions[index]) { pipeline.append(change) }
            pipeline.append(upsert)
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
