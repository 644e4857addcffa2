import AppleReceipts
import AttestCore
import DeviceIntelligence
import PostgresClient

/// What applying a refreshed receipt came to.
public enum RefreshApplied: Sendable, Equatable {
    /// Stored; `categoryChanged` when its metric moved the device's risk category (an event was written).
    case stored(categoryChanged: Bool)
    /// The lease had expired and another worker took the device: nothing was written.
    case leaseLost
    /// The device's receipt changed while Apple was asked (it attested again): the state was settled, the
    /// refreshed receipt and its metric were not stored.
    case superseded
}

/// The refresh schedule's reads and writes (``ReceiptRefreshTable``), each one transaction.
extension AttestStore {
    /// Leases up to `limit` due devices to `owner` for `leaseSeconds`.
    public func claimRefreshes(owner: String, now: Timestamp, limit: Int, leaseSeconds: Int64) throws(PGError) -> [ClaimedRefresh] {
        try connection.run { c throws(PGError) in
            try c.execute(ReceiptRefreshTable.Claim(owner: owner, now: now, limit: limit, leaseSeconds: leaseSeconds))
        }
    }

    /// Leases one device, due or not; nil when it has no receipt, is not the app's, or another holds it.
    public func leaseRefresh(
        keyId: [UInt8], teamId: String?, bundleId: String?, owner: String, now: Timestamp, leaseSeconds: Int64
    ) throws(PGError) -> ClaimedRefresh? {
        try connection.run { c throws(PGError) in
            try c.execute(ReceiptRefreshTable.LeaseOne(keyId: keyId, app: (teamId, bundleId), owner: owner, now: now, leaseSeconds: leaseSeconds))
        }
    }

    /// Writes a try that stored nothing (and pauses the team when `next` says so); false when the lease was
    /// lost.
    @discardableResult
    public func settleRefresh(_ device: ClaimedRefresh, owner: String, next: NextRefresh, now: Timestamp, called: Bool) throws(PGError) -> Bool {
        try connection.run { c throws(PGError) in
            try c.transaction { c throws(PGError) in
                let settled = try c.execute(ReceiptRefreshTable.Settle(keyId: device.keyId, owner: owner, next: next, now: now, called: called))
                if settled == 1, let pause = next.pauseTeam, let teamId = device.teamId {
                    try c.execute(
                        ReceiptRefreshTable.PauseTeam(teamId: teamId, until: pause.until, status: pause.status, reason: next.error ?? "", now: now))
                }
                return settled == 1
            }
        }
    }

    /// Stores a refreshed receipt in one transaction, only while `owner` holds the lease and the device
    /// still holds the receipt Apple was sent: the device's receipt replaced, its team's pause ended (Apple took the key), the state settled as `next`, and, when it carries a metric, the metric appended to
    /// the history and scored into the device's risk row (its receipt factors replaced, the other factors
    /// as the last job left them), with a risk history row when the score moves and an event when the
    /// category does.
    public func storeRefresh(
        _ device: ClaimedRefresh, _ receipt: RefreshedReceipt, owner: String, next: NextRefresh, now: Timestamp
    ) throws(PGError) -> RefreshApplied {
        try connection.run { c throws(PGError) in
            try c.transaction { c throws(PGError) -> RefreshApplied in
                guard try c.execute(ReceiptRefreshTable.Settle(keyId: device.keyId, owner: owner, next: next, now: now, called: true)) == 1
                else { return .leaseLost }
                guard let sent = device.receipt,
                    try c.execute(ReceiptRefreshTable.StoreReceipt(keyId: device.keyId, der: receipt.der, replacing: sent)) == 1
                else { return .superseded }
                if let teamId = device.teamId { try c.execute(ReceiptRefreshTable.ResumeTeam(teamId: teamId, now: now)) }
                guard let metric = receipt.riskMetric, metric >= 0, let app = device.appDevice else { return .stored(categoryChanged: false) }
                try c.execute(ReceiptRefreshTable.AppendMetric(keyId: device.keyId, createdAt: receipt.creationTime, metric: metric, storedAt: now))
                guard let risk = try c.execute(ReceiptRefreshTable.LockRisk(app)) else { return .stored(categoryChanged: false) }
                var history = risk.history
                history.refreshed(metric: metric, createdAt: receipt.creationTime)
                let signals = history.signals(at: now, extensions: nil)
                let held = risk.held ?? HeldScore(score: 0, factors: .array([]))
                let assessment =
                    RiskModel.rescoringReceipt(held, signals, policy: risk.policy)
                    ?? RiskModel.rescoringReceipt(HeldScore(score: 0, factors: .array([])), signals, policy: risk.policy)!
                let cause = Self.refreshCause(device.keyId, receipt.creationTime)
                try c.execute(ReceiptRefreshTable.UpdateRisk(app, cause: cause, history: history, assessment: assessment, now: now))
                let changed = risk.category != assessment.category.rawValue
                if changed {
                    try c.execute(
                        ReceiptRefreshTable.CategoryChanged(
                            app, deviceId: risk.deviceId, cause: cause, from: risk.category, to: assessment, at: now))
                }
                return .stored(categoryChanged: changed)
            }
        }
    }

    /// The teams paused at `now`, with Apple's status and reason and when the pause ends.
    public func pausedRefreshTeams(now: Timestamp) throws(PGError) -> [(teamId: String, status: Int, reason: String?, pausedUntil: Timestamp)] {
        try connection.run { c throws(PGError) in try c.execute(ReceiptRefreshTable.PausedTeams(now: now)) }
            .map { ($0.teamId, $0.status, $0.reason, $0.pausedUntil) }
    }

    /// Deletes the metrics stored before `before`, `chunk` rows per statement; returns how many.
    public func purgeReceiptMetrics(before: Timestamp, chunk: Int = 10_000) throws(PGError) -> Int {
        try purgeInChunks(chunk) { c, limit throws(PGError) in try c.execute(ReceiptRefreshTable.PurgeMetrics(before: before, limit: limit)) }
    }

    /// A device's stored receipt, refresh state and latest `metrics` metrics; nil when the key is not stored.
    public func storedReceipt(keyId: [UInt8], metrics: Int = 50) throws(PGError) -> StoredReceipt? {
        try connection.run { c throws(PGError) in try c.execute(ReceiptRefreshTable.Show(keyId: keyId, metrics: metrics)) }
    }

    /// What a refreshed receipt's risk history row and event name as their cause (the `jobId` member of
    /// the event): the key and the receipt's creation time, so one receipt is one cause.
    static func refreshCause(_ keyId: [UInt8], _ createdAt: Timestamp) -> String {
        "receipt:\(Hex.encode(keyId))@\(createdAt.rfc3339)"
    }
}
