import AttestCore
import AttestJobs
import DeviceIntelligence
import Observability
import PostgresClient

extension BatchProcessor {
    /// Reads the histories, monthly counts and quotas the batch's jobs are decided with, in one round trip.
    /// A key's identity can change within the batch (an attestation bringing a fingerprint), so the
    /// fingerprints the batch's attestations bring are read for their keys' other jobs too.
    func intelligenceLedger(_ entries: [JobEntry]) throws(PGError) -> IntelligenceLedger {
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
            let stored = key.flatMap { devices.get($0)?.record }.flatMap {
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
        return IntelligenceLedger(try store.intelligence(query))
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
