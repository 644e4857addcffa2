import AttestCore
import AttestCrypto
import AttestJobs
import AttestTokens
import AttestVerifier
import ConcurrentMap
import DeviceIntelligence
import KafkaClient
import Observability
import Store

/// The decide stage, in three steps so that a batch's outcome never depends on which thread ran first:
/// 1. every job through the shared check list (``JobVerifier/check(_:_:)``) but its quota step, in parallel
///    across keys: each key's jobs in order, each against the device state the previous one leaves (an
///    attestation followed by its first assertions in the same batch);
/// 2. on one thread, in batch order: the quota step, then the ledger (risk, monthly counts) and the device
///    each job leaves, so a month's last quota slots and the history of a fingerprint several keys share go
///    to the jobs in the order they were consumed;
/// 3. the verdicts' tokens and JSON, in parallel again.
extension BatchProcessor {
    func decide(
        _ entries: [JobEntry], now: Timestamp, challenges: [Int: ChallengeOutcome], _ ledger: IntelligenceLedger
    ) -> Decided {
        var groups = [[UInt8]: [Int]]()
        var order = [[UInt8]]()
        for (i, entry) in entries.enumerated() {
            let key = Self.groupKey(entry)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(i)
        }
        let work = order.map { groups[$0] ?? [] }
        // `threads` threads (ATTEST_WORKERS; the lane's own alone below `parallelFrom` jobs), each taking the
        // next key group until none is left: groups differ in cost (an attestation is several assertions'
        // worth), so a fixed split leaves threads idle.
        let threads = entries.count < Self.parallelFrom ? 1 : settings.threads
        var results = concurrentMap(work.count, threads: min(threads, work.count)) { g in
            var state: DeviceState? = nil
            return work[g].map { i in check(entries[i], now: now, challenge: challenges[entries[i].position], state: &state) }
        }
        // Each result moved (`take`) to its job's place and on into step 2, never copied: a copy retains every
        // reference the checks' result holds, and its original is released after.
        var checked = [JobVerifier.Checked?](repeating: nil, count: entries.count)
        for g in work.indices {
            for (k, i) in work[g].enumerated() { checked[i] = results[g][k].take() }
        }

        var keys = [[UInt8]: KeyInBatch]()
        let settled = entries.indices.map { i in
            settle(entries[i], checked[i].take(), now: now, challenge: challenges[entries[i].position], keys: &keys, ledger)
        }
        let decisions = concurrentMap(settled.count, threads: min(threads, settled.count)) { i in finish(settled[i], now: now) }
        return Decided(entries: entries, decisions: decisions, keys: settled.map(\.key))
    }

    /// A batch of fewer jobs is decided on its lane's thread alone: waking other threads for a few jobs
    /// costs more CPU than running them side by side saves (at 1,000 jobs/s a batch holds three or four),
    /// and the other lane is deciding its own batch beside it.
    static let parallelFrom = 8

    /// The key a job's jobs are grouped by: its key's bytes, else its keyId or jobId (a group of its own).
    private static func groupKey(_ entry: JobEntry) -> [UInt8] {
        entry.keyBytes ?? Array((entry.job?.keyId ?? entry.jobId).utf8)
    }

    /// A key's device as the batch has left it so far, with its key parsed for the checks.
    private struct DeviceState {
        var record: DeviceRecord
        var key: DeviceCache.DeviceKey
    }

    /// A key as step 2 has left it: its device so far in batch order (nil: none yet), and whether step 1's
    /// view of its later jobs is void (an attestation step 1 accepted was turned away by the quota).
    private struct KeyInBatch {
        var record: DeviceRecord?
        var void = false
    }

    /// A job after step 2: its verdict, what it changes and who it is, before its token and JSON.
    struct Settled: Sendable {
        let entry: JobEntry
        var verdict: Verdict
        let change: Decision.DeviceChange
        let intelligence: IntelligenceChange?
        /// The app whose token an accepted verdict gets.
        let signWith: AppPolicy?
        /// An accepted App Attest attestation's key as the checks parsed it, for the device cache: parsed
        /// again from its bytes, it would be imported into OpenSSL again at the key's next assertion.
        var key: DeviceCache.DeviceKey? = nil
    }

    /// Step 1 for one job: the checks but the quota's, against `state`, which it moves as an accepted job
    /// would. nil for an entry whose fields could not be read.
    private func check(_ entry: JobEntry, now: Timestamp, challenge: ChallengeOutcome?, state: inout DeviceState?) -> JobVerifier.Checked? {
        guard let job = entry.job else { return nil }
        if state == nil, let keyBytes = entry.keyBytes, let cached = devices.get(keyBytes) {
            state = DeviceState(record: cached.record, key: cached.key)
        }
        let known = state.flatMap { $0.record.teamId == job.teamId && $0.record.bundleId == job.bundleId ? $0 : nil }
        let checked = timed(job.kind) { verifier.check(job, inputs(job, entry, now: now, challenge: challenge, known: known)) }
        switch checked.verified {
        case .attestation(let verified)?:
            state = DeviceState(
                record: Self.record(verified.keyId, job, publicKey: verified.publicKey, environment: verified.environment.rawValue,
                    deviceId: "", previous: state?.record),
                key: DeviceCache.DeviceKey(appAttest: verified.key))
        case .androidAttestation(let verified)?:
            let record = Self.record(
                Digest.sha256.hash(verified.subjectPublicKeyInfo), job, publicKey: verified.subjectPublicKeyInfo,
                environment: DeviceRecord.androidEnvironment, deviceId: "", previous: state?.record)
            state = DeviceCache.DeviceKey(record).map { DeviceState(record: record, key: $0) }
        case .assertion(let verified)?:
            state?.record.counter = verified.counter
        case .androidAssertion?, nil:
            break
        }
        return checked
    }

    /// The check list's inputs for `job` against the key's device `known` (this app's, if any), without the
    /// quota step's (step 2 gives it).
    private func inputs(_ job: Job, _ entry: JobEntry, now: Timestamp, challenge: ChallengeOutcome?, known: DeviceState?) -> JobCheckInputs {
        let app = entry.policy
        // A key is only ever its own platform's: an App Attest keyId names no Android key, and back.
        return JobCheckInputs(
            now: now, brokerTimestampMs: entry.message.timestampMs, app: app.map { Self.rules($0, challenge: challenge) },
            key: known.flatMap { known in
                known.key.appAttest.map {
                    AttestedKey(device: StoredDevice(publicKey: $0, counter: known.record.counter), environment: known.record.environment)
                }
            }, androidKey: known?.key.android, androidStatusList: settings.androidStatus?.input(at: now),
            keyRevokedAt: known?.record.revokedAt)
    }

    /// Step 2 for one job, in batch order: the quota step, then risk and counts, and the device it leaves.
    private func settle(
        _ entry: JobEntry, _ checked: consuming JobVerifier.Checked?, now: Timestamp, challenge: ChallengeOutcome?,
        keys: inout [[UInt8]: KeyInBatch], _ ledger: IntelligenceLedger
    ) -> Settled {
        guard let job = entry.job, var checked else {
            let failure = entry.invalidFailure!
            return Settled(entry: entry, verdict: verifier.rejection(jobId: entry.jobId, failure, at: now), change: .none, intelligence: nil, signWith: nil)
        }
        let group = Self.groupKey(entry)
        var key = keys[group] ?? KeyInBatch(record: entry.keyBytes.flatMap { devices.get($0)?.record })
        // The key's device as this app knows it (a key attested for another app is unknown to this one): what
        // its identity and risk history go by.
        let known = key.record.flatMap { $0.teamId == job.teamId && $0.bundleId == job.bundleId ? $0 : nil }
        if key.void {
            // Step 1 checked this job against a device the quota then turned away: check it again as it stands
            // (the key parsed again only here, off the common path).
            let state = known.flatMap { record in DeviceCache.DeviceKey(record).map { DeviceState(record: record, key: $0) } }
            checked = timed(job.kind) { verifier.check(job, inputs(job, entry, now: now, challenge: challenge, known: state)) }
        }
        let app = entry.policy
        if checked.verified?.isAttestation == true, let app {
            let quota = JobCheckInputs(now: now, app: nil, quota: { job in ledger.admit(job, keyBytes: entry.keyBytes, stored: known, app: app) })
            verifier.checkQuota(&checked, job, quota)
            if checked.verified == nil { key.void = true }
        }
        var verdict = checked.verdict
        let intelligence = ledger.assess(&verdict, job: job, keyBytes: entry.keyBytes, stored: known, app: checked.passedApp ? app : nil)
        var change = Decision.DeviceChange.none
        var parsed: DeviceCache.DeviceKey? = nil
        switch (checked.verified, app) {
        case (.attestation(let verified)?, _?):
            parsed = DeviceCache.DeviceKey(appAttest: verified.key)
            let record = Self.record(
                verified.keyId, job, publicKey: verified.publicKey, environment: verified.environment.rawValue,
                deviceId: intelligence.deviceId, previous: key.record)
            key = KeyInBatch(record: record)
            change = .attested(
                Decision.AttestedDevice(
                    keyId: verified.keyId, teamId: job.teamId, bundleId: job.bundleId, publicKey: verified.publicKey,
                    environment: verified.environment.rawValue, receipt: verified.receipt.der, deviceId: intelligence.deviceId,
                    metadata: job.metadata))
        case (.androidAttestation(let verified)?, _?):
            let keyId = Digest.sha256.hash(verified.subjectPublicKeyInfo)
            key = KeyInBatch(
                record: Self.record(
                    keyId, job, publicKey: verified.subjectPublicKeyInfo, environment: DeviceRecord.androidEnvironment,
                    deviceId: intelligence.deviceId, previous: key.record))
            change = .attested(
                Decision.AttestedDevice(
                    keyId: keyId, teamId: job.teamId, bundleId: job.bundleId, publicKey: verified.subjectPublicKeyInfo,
                    environment: DeviceRecord.androidEnvironment, receipt: nil, deviceId: intelligence.deviceId, metadata: job.metadata))
        case (.assertion(let verified)?, _?):
            key.record?.counter = verified.counter
            change = .advanced(keyId: verified.keyId, counter: verified.counter)
        case (.androidAssertion?, _?):
            // No counter to move: the challenge it consumed (or the backend's) is its freshness.
            change = entry.keyBytes.map { .used(keyId: $0) } ?? .none
        default:
            break
        }
        keys[group] = key
        return Settled(
            entry: entry, verdict: verdict, change: change, intelligence: intelligence, signWith: checked.verified == nil ? nil : app,
            key: parsed)
    }

    /// Step 3 for one job: its token when accepted, and the decision as stored.
    /// Borrowed, and the verdict copied only to be signed: a copy of a settled job retains every field of
    /// its verdict and change, and releases them again.
    private func finish(_ settled: borrowing Settled, now: Timestamp) -> Decision {
        let entry = settled.entry
        let source = Decision.Source(topic: entry.message.topic, partition: entry.message.partition, offset: entry.message.offset)
        var decision: Decision
        if let job = entry.job {
            if let signer = settings.tokenSigner, let app = settled.signWith, let intelligence = settled.intelligence {
                var verdict = settled.verdict
                sign(&verdict, with: signer, app: app, job: job, intelligence)
                decision = self.decision(verdict, job: job, jobId: job.jobId, source: source, change: settled.change, intelligence)
            } else {
                decision = self.decision(settled.verdict, job: job, jobId: job.jobId, source: source, change: settled.change, settled.intelligence)
            }
        } else {
            decision = self.decision(settled.verdict, job: nil, jobId: entry.jobId, source: source, change: .none, scope: entry.scope)
        }
        decision.jobDigest = entry.digest
        return decision
    }

    /// The device an accepted attestation leaves: its counter kept only when the same key is attested again.
    private static func record(
        _ keyId: [UInt8], _ job: Job, publicKey: [UInt8], environment: String, deviceId: String, previous: DeviceRecord?
    ) -> DeviceRecord {
        DeviceRecord(
            keyId: keyId, teamId: job.teamId, bundleId: job.bundleId, publicKey: publicKey,
            counter: previous.flatMap { $0.publicKey == publicKey ? $0.counter : nil } ?? 0, environment: environment,
            deviceId: deviceId, fingerprint: job.metadata["deviceFingerprint"] ?? previous?.fingerprint)
    }

    /// What the app's registration says to the checks, with the store's answer to the job's challenge claim.
    static func rules(_ app: AppPolicy, challenge: ChallengeOutcome?) -> AppRules {
        switch app.challenges {
        case .backend: AppRules(environments: app.environments, challenges: .backend, android: app.android)
        case .worker: AppRules(environments: app.environments, challenges: .worker(refusal: refusal(challenge)), android: app.android)
        }
    }

    /// Adds the verdict token signed by `signer` (accepted verdicts only; `attachToken` leaves others),
    /// with the device id and risk category the verdict reports and the app's custom claims; limited-use when
    /// the job asks or the app requires it for assertions (``AppPolicy/limitedUse(_:)``).
    private func sign(_ verdict: inout Verdict, with signer: TokenSigner, app: AppPolicy, job: Job, _ intelligence: IntelligenceChange) {
        let limitedUse = app.limitedUse(job)
        do {
            try verdict.attachToken(
                signer: signer, lifetimeSeconds: Int64(app.tokenLifetime(limitedUse: limitedUse)), deviceId: intelligence.deviceId,
                riskCategory: intelligence.riskCategory.rawValue, limitedUse: limitedUse, customClaims: app.claims.members)
        } catch {
            // OpenSSL refusing to sign means a broken process: the verdict goes out without a token, counted.
            metrics?.errors.labels(["token"]).increment()
        }
    }

    /// Runs one job's checks, timed per kind when metrics are on.
    private func timed<T>(_ kind: Job.Kind, _ verify: () -> T) -> T {
        guard let metrics else { return verify() }
        return metrics.verification(kind).time(verify)
    }
}
