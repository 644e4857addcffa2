import AttestCore
import AttestJobs
import DeviceIntelligence
import Observability
import PostgresClient
import Store

extension BatchProcessor {
    /// The histories, monthly counts and quotas these jobs are decided with. A key's identity can change
    /// within the batch (an attestation bringing a fingerprint), so the fingerprints the batch's
    /// attestations bring are read for their keys' other jobs too. Identities come from `stored`, each key's
    /// device: of it only its app and fingerprint matter (``sameIdentities(_:_:)``).
    func intelligenceQuery(_ entries: [JobEntry], stored devices: [[UInt8]: DeviceRecord]) -> IntelligenceQuery {
        var brought = [[UInt8]: String]()
        for entry in entries {
            guard let job = entry.job, job.kind == .attestation, let key = entry.keyBytes,
                let fingerprint = job.metadata["deviceFingerprint"]
            else { continue }
            brought[key] = fingerprint
        }
        var query = IntelligenceQuery()
        for entry in entries {
            guard let job = entry.job else { continue }
            let key = entry.keyBytes
            let stored = key.flatMap { devices[$0] }.flatMap {
                $0.teamId == job.teamId && $0.bundleId == job.bundleId ? $0 : nil
            }
            var identities = [DeviceIdentity(job: job, keyBytes: key, stored: stored)]
            if job.metadata["deviceFingerprint"] == nil, let fingerprint = key.flatMap({ brought[$0] }) {
                identities.append(DeviceIdentity(fingerprint: fingerprint))
            }
            let month = AppMonth(teamId: job.teamId, bundleId: job.bundleId, month: job.receivedAt.utcMonth)
            query.months.insert(month)
            for identity in identities {
                query.devices.insert(AppDevice(teamId: job.teamId, bundleId: job.bundleId, identity: identity))
                query.counted.insert(MonthlyDevice(month: month, identity: identity))
            }
        }
        return query
    }

    /// Whether a key's jobs get the same identities from device `a` as from `b` (``intelligenceQuery(_:stored:)``
    /// reads only its app and fingerprint), byte for byte as identities compare.
    static func sameIdentities(_ a: DeviceRecord?, _ b: DeviceRecord?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        guard ExactText.equal(a.teamId, b.teamId), ExactText.equal(a.bundleId, b.bundleId) else { return false }
        switch (a.fingerprint, b.fingerprint) {
        case (nil, nil): return true
        case (let x?, let y?): return ExactText.equal(x, y)
        default: return false
        }
    }

    /// The ledger `entries` are decided with. `snapshot` was read with the gather, for `guessed`: the
    /// query built from `cached`, the devices the cache held before the gather. When the gather's fresh
    /// rows (`fresh`) give every key the same app and fingerprint, the query they give is the same (or
    /// smaller: `entries` leaves out redelivered jobs) and is not built again; otherwise what they make the
    /// jobs need besides (a key not cached yet, a row another worker changed) is read now. Either way the
    /// common batch costs no round trip of its own here; a row absent from a snapshot means absent from
    /// the database only for what was asked, hence never a guess taken for an answer.
    func intelligenceLedger(
        _ entries: [JobEntry], read snapshot: IntelligenceSnapshot, for guessed: IntelligenceQuery,
        cached: [[UInt8]: DeviceRecord], fresh: [[UInt8]: DeviceRecord], keys: Set<[UInt8]>, in tx: any BatchTransaction
    ) throws(PGError) -> IntelligenceLedger {
        if keys.allSatisfy({ Self.sameIdentities(cached[$0], fresh[$0]) }) { return IntelligenceLedger(snapshot) }
        let needed = intelligenceQuery(entries, stored: fresh)
        var missing = IntelligenceQuery()
        missing.devices = needed.devices.subtracting(guessed.devices)
        missing.counted = needed.counted.subtracting(guessed.counted)
        missing.months = needed.months.subtracting(guessed.months)
        guard !(missing.isEmpty && missing.counted.isEmpty) else { return IntelligenceLedger(snapshot) }
        let more = try tx.intelligence(missing)
        var merged = snapshot
        merged.histories.merge(more.histories) { _, fresh in fresh }
        merged.scores.merge(more.scores) { _, fresh in fresh }
        merged.counted.formUnion(more.counted)
        merged.quotas.merge(more.quotas) { _, fresh in fresh }
        return IntelligenceLedger(merged)
    }

    /// Quota thresholds are rare and actionable: a warning line and a metric, once per app and month.
    func report(_ crossings: [QuotaCrossing]) {
        for crossing in crossings {
            metrics?.quotaThresholds.labels([String(crossing.threshold)]).increment()
            logger?.warning(
                "monthly active device quota threshold crossed",
                [
                    ("teamId", .string(crossing.teamId)), ("bundleId", .string(crossing.bundleId)),
                    ("month", .string(crossing.month)), ("threshold", .int(Int64(crossing.threshold))),
                    ("devices", .int(Int64(crossing.devices))), ("limit", .int(Int64(crossing.limit))),
                ])
        }
    }
}
