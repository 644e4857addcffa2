import AttestCore
import AttestCrypto
import AttestJobs
import AttestTokens
import AttestVerifier
import ConcurrentMap
import DeviceIntelligence
import KafkaClient
import Observability

/// The decide stage: each job through the shared check list (``JobVerifier/check(_:_:)``) with the state
/// the batch fetched beforehand as its inputs, then its device intelligence and token.
extension BatchProcessor {
    /// Decides `entries` in parallel across keys; the jobs of one key in order, each seeing the device state
    /// the previous one leaves (an attestation followed by its first assertions in the same batch).
    func decide(
        _ entries: [JobEntry], now: Timestamp, challenges: [Int: ChallengeOutcome], _ ledger: IntelligenceLedger
    ) -> [Decided] {
        var groups = [[UInt8]: [JobEntry]]()
        var order = [[UInt8]]()
        for entry in entries {
            let key = entry.keyBytes ?? Array((entry.job?.keyId ?? entry.jobId).utf8)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(entry)
        }
        let work = order.map { groups[$0] ?? [] }
        // `threads` lanes (ATTEST_WORKERS), each taking the next key group until none is left: groups differ
        // in cost (an attestation is several assertions' worth), so a fixed split leaves lanes idle.
        let lanes = max(1, min(settings.threads, work.count))
        return concurrentMap(work.count, threads: lanes) { g in
            var state: DeviceState? = nil
            return work[g].map { entry in
                var decision = decideOne(entry, now: now, challenge: challenges[entry.position], state: &state, ledger)
                decision.jobDigest = entry.digest
                return Decided(entry: entry, decision: decision)
            }
        }.flatMap { $0 }
    }

    /// A key's device as the batch has left it so far.
    private struct DeviceState {
        var record: DeviceRecord
        var key: DeviceCache.DeviceKey
    }

    /// - Parameters:
    ///   - now: the batch's clock reading, the one its challenge claims were made against.
    ///   - challenge: how the job's worker-issued challenge was settled; nil when it made no claim.
    private func decideOne(
        _ entry: JobEntry, now: Timestamp, challenge: ChallengeOutcome?, state: inout DeviceState?, _ ledger: IntelligenceLedger
    ) -> Decision {
        let source = Decision.Source(topic: entry.message.topic, partition: entry.message.partition, offset: entry.message.offset)
        let (job, keyBytes): (Job, [UInt8]?)
        switch entry.content {
        case .invalid(let failure):
            let verdict = verifier.rejection(jobId: entry.jobId, failure, at: now)
            return decision(verdict, job: nil, jobId: entry.jobId, source: source, change: .none, scope: entry.scope)
        case .job(let valid, let bytes):
            (job, keyBytes) = (valid, bytes)
        }
        if state == nil, let keyBytes, let cached = devices.get(keyBytes) {
            state = DeviceState(record: cached.record, key: cached.key)
        }
        // The key's device as this app knows it (a key attested for another app is unknown to this one): what
        // its assertions are checked against and its identity and risk history go by.
        let known = state.flatMap { $0.record.teamId == job.teamId && $0.record.bundleId == job.bundleId ? $0 : nil }
        let app = policy(for: job)
        // A key is only ever its own platform's: an App Attest keyId names no Android key, and back.
        let inputs = JobCheckInputs(
            now: now, brokerTimestampMs: entry.message.timestampMs, app: app.map { Self.rules($0, challenge: challenge) },
            key: known.flatMap { known in
                known.key.appAttest.map {
                    AttestedKey(device: StoredDevice(publicKey: $0, counter: known.record.counter), environment: known.record.environment)
                }
            }, androidKey: known?.key.android, androidStatusList: settings.androidStatus?.input(at: now),
            keyRevokedAt: known?.record.revokedAt,
            quota: app.map { app in { job in ledger.admit(job, keyBytes: keyBytes, stored: known?.record, app: app) } })
        let checked = timed(job.kind) { verifier.check(job, inputs) }
        var verdict = checked.verdict
        let intelligence = ledger.assess(
            &verdict, job: job, keyBytes: keyBytes, stored: known?.record, app: checked.passedApp ? app : nil)
        switch (checked.verified, app) {
        case (.attestation(let verified)?, let app?):
            let previous = state?.record
            let record = DeviceRecord(
                keyId: verified.keyId, teamId: job.teamId, bundleId: job.bundleId, publicKey: verified.publicKey,
                counter: previous.flatMap { $0.publicKey == verified.publicKey ? $0.counter : nil } ?? 0,
                environment: verified.environment.rawValue, deviceId: intelligence.deviceId,
                fingerprint: job.metadata["deviceFingerprint"] ?? previous?.fingerprint)
            state = DeviceState(record: record, key: DeviceCache.DeviceKey(appAttest: verified.key))
            sign(&verdict, app: app, job: job, intelligence)
            let device = Decision.AttestedDevice(
                keyId: verified.keyId, teamId: job.teamId, bundleId: job.bundleId, publicKey: verified.publicKey,
                environment: verified.environment.rawValue, receipt: verified.receipt.der, deviceId: intelligence.deviceId,
                metadata: job.metadata)
            return decision(verdict, job: job, jobId: job.jobId, source: source, change: .attested(device), intelligence)
        case (.androidAttestation(let verified)?, let app?):
            let keyId = Digest.sha256.hash(verified.subjectPublicKeyInfo)
            let previous = state?.record
            let record = DeviceRecord(
                keyId: keyId, teamId: job.teamId, bundleId: job.bundleId, publicKey: verified.subjectPublicKeyInfo, counter: 0,
                environment: DeviceRecord.androidEnvironment, deviceId: intelligence.deviceId,
                fingerprint: job.metadata["deviceFingerprint"] ?? previous?.fingerprint)
            state = DeviceCache.DeviceKey(record).map { DeviceState(record: record, key: $0) }
            sign(&verdict, app: app, job: job, intelligence)
            let device = Decision.AttestedDevice(
                keyId: keyId, teamId: job.teamId, bundleId: job.bundleId, publicKey: verified.subjectPublicKeyInfo,
                environment: DeviceRecord.androidEnvironment, receipt: nil, deviceId: intelligence.deviceId, metadata: job.metadata)
            return decision(verdict, job: job, jobId: job.jobId, source: source, change: .attested(device), intelligence)
        case (.androidAssertion?, let app?):
            // No counter to move: the challenge it consumed (or the backend's) is its freshness.
            sign(&verdict, app: app, job: job, intelligence)
            return decision(verdict, job: job, jobId: job.jobId, source: source, change: keyBytes.map { .used(keyId: $0) } ?? .none, intelligence)
        case (.assertion(let verified)?, let app?):
            state?.record.counter = verified.counter
            sign(&verdict, app: app, job: job, intelligence)
            return decision(
                verdict, job: job, jobId: job.jobId, source: source,
                change: .advanced(keyId: verified.keyId, counter: verified.counter), intelligence)
        default:
            return decision(verdict, job: job, jobId: job.jobId, source: source, change: .none, intelligence)
        }
    }

    /// What the app's registration says to the checks, with the store's answer to the job's challenge claim.
    static func rules(_ app: AppPolicy, challenge: ChallengeOutcome?) -> AppRules {
        switch app.challenges {
        case .backend: AppRules(environments: app.environments, challenges: .backend, android: app.android)
        case .worker: AppRules(environments: app.environments, challenges: .worker(refusal: refusal(challenge)), android: app.android)
        }
    }

    /// Adds the verdict token when keys are configured (accepted verdicts only; `attachToken` leaves others),
    /// with the device id and risk category the verdict reports and the app's custom claims; limited-use when
    /// the job asks or the app requires it for assertions (``AppPolicy/limitedUse(_:)``).
    private func sign(_ verdict: inout Verdict, app: AppPolicy, job: Job, _ intelligence: IntelligenceChange) {
        guard let signer = settings.tokenSigner else { return }
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
        return metrics.verificationSeconds.labels([kind.rawValue]).time(verify)
    }
}
