import AttestCore
import AttestCrypto
import AttestJobs
import AttestTokens
import AttestVerifier
import DeviceIntelligence
import KafkaClient
import Observability
import PostgresClient
import Store
import Synchronization

/// Decides a batch of consumed messages and stores the decisions, returning what to publish.
///
/// Per batch: classify (dead letters, invalid jobs); then one transaction (``DecisionStore/batch(_:)``):
/// gather, in one round trip, the batch's jobId and key locks, the stored verdicts, devices, the devices'
/// risk histories, monthly counts and quotas and the worker-issued challenges the jobs claim
/// (``GatherRequest``; a second read only for identities the fresh device rows change); decide (the object
/// checks in parallel across keys, each key's jobs in order, then quota, risk and counts in batch order:
/// BatchProcessor+Decide); settle every decision and commit in one round trip (verdicts, devices, counts,
/// scores); then the messages to publish in consumption order. A jobId is decided once per app: a
/// redelivered job gets the verdict stored for it, unchanged, and other content under a decided jobId gets
/// a job_id_reused rejection of its own. Under the locks what the gather read stands until the commit, so no
/// decision is taken again.
public final class BatchProcessor: Sendable {
    public struct Settings: Sendable {
        public var verdictsTopic: String
        public var deadLetterTopic: String
        public var maxMessageBytes: Int
        public var admitUnknownApps: Bool
        public var defaultEnvironments: EnvironmentPolicy
        public var threads: Int
        /// Signs a token into every accepted verdict; nil: verdicts carry none.
        public var tokenSigner: TokenSigner?
        /// What every published message stays within (the producer's `message.max.bytes`).
        public var outboundBudget: OutboundBudget = .standard
        /// ATTEST_REPLY_TOPICS: where a job's `reply-to` may send a copy of its verdict.
        public var replyTopics: ReplyTopics = .none
        /// How many distinct topics replies go to, shared by the lanes (``sharing(store:)`` keeps it).
        public var replyTopicsInUse: ReplyTopicsInUse
        /// The status list Android attestations are checked against and what a stale one means; nil: no
        /// list is kept (ATTEST_ANDROID_STATUS_LIST_URL and _FILE unset), and none is checked.
        public var androidStatus: AndroidStatusGate?

        public init(
            verdictsTopic: String, deadLetterTopic: String, maxMessageBytes: Int = RecordClassifier.defaultMaxMessageBytes,
            admitUnknownApps: Bool = false, defaultEnvironments: EnvironmentPolicy = .production, threads: Int = 2,
            tokenSigner: TokenSigner? = nil, outboundBudget: OutboundBudget = .standard, replyTopics: ReplyTopics = .none,
            replyTopicsInUse: ReplyTopicsInUse = ReplyTopicsInUse(), androidStatus: AndroidStatusGate? = nil
        ) {
            self.androidStatus = androidStatus
            self.outboundBudget = outboundBudget
            self.replyTopics = replyTopics
            self.replyTopicsInUse = replyTopicsInUse
            self.verdictsTopic = verdictsTopic
            self.deadLetterTopic = deadLetterTopic
            self.maxMessageBytes = maxMessageBytes
            self.admitUnknownApps = admitUnknownApps
            self.defaultEnvironments = defaultEnvironments
            self.threads = threads
            self.tokenSigner = tokenSigner
        }
    }

    let verifier: JobVerifier
    let store: any DecisionStore
    let devices: DeviceCache
    let settings: Settings
    let metrics: WorkerMetrics?
    let logger: Logger?
    private let apps = Mutex<RegisteredApps>(RegisteredApps())
    /// Apps are re-read this often (and on a miss), so `attest-worker app` changes reach running workers.
    static let appRefreshSeconds: Int64 = 5
    public init(
        verifier: JobVerifier, store: any DecisionStore, devices: DeviceCache, settings: Settings,
        metrics: WorkerMetrics? = nil, logger: Logger? = nil
    ) {
        self.verifier = verifier
        self.store = store
        self.devices = devices
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
    }

    /// Another processor like this one (same verifier, device cache, settings, metrics and logger) storing through
    /// `store`: one per batch lane, since a connection serves one thread at a time.
    public func sharing(store: any DecisionStore) -> BatchProcessor {
        BatchProcessor(verifier: verifier, store: store, devices: devices, settings: settings, metrics: metrics, logger: logger)
    }

    /// Decides and stores `messages`; throws only infrastructure errors (after the store's own retries),
    /// in which case nothing of the batch may be acknowledged.
    public func process(_ messages: [KafkaMessage]) throws(PGError) -> [Outbound] {
        var timings = BatchTimings()
        return try process(messages, timings: &timings)
    }

    /// The same, adding the time spent reading and storing to `timings` (the lane's stage metrics).
    public func process(_ messages: [KafkaMessage], timings: inout BatchTimings) throws(PGError) -> [Outbound] {
        let now = verifier.clock.now()
        // Apps first: an Android job's app is the registration its package belongs to.
        try timings.timed(\.reading) { () throws(PGError) in try refreshApps(now: now, force: false) }
        // What each message publishes, by position; every one gets its answer before the batch returns.
        var published = [Outbound?](repeating: nil, count: messages.count)
        var jobs = [JobEntry]()
        for (position, message) in messages.enumerated() {
            switch classify(message, at: position, now: now) {
            case .deadLetter(let letter): published[position] = letter
            case .job(let entry): jobs.append(entry)
            }
        }
        // An app registered moments ago is read again at once (at most once a second), and the Android jobs
        // found their apps again, before anything is read under their apps.
        if jobs.contains(where: { $0.job != nil && $0.policy == nil }) {
            try timings.timed(\.reading) { () throws(PGError) in try refreshApps(now: now, force: true) }
            let apps = apps.withLock { $0 }
            for i in jobs.indices { jobs[i] = jobs[i].resolvingApp(in: apps) { policy(for: $0, in: apps) } }
        }

        // Gather, decide and settle in one transaction, run again whole after a transient failure. The gather
        // locks the batch's jobIds and keys and reads every key again, cached or not, so a revocation (or any
        // other worker's change) reaches this worker by its next batch and nothing it read can change before
        // its settle: the decision stands as taken. The cache saves parsing the keys. The histories and counts
        // come in that trip too, for the identities the cache gives now: the ledger reads only what the fresh
        // rows change (a key seen for the first time) afterwards. The worker-issued challenges the jobs claim
        // go in that trip too: claiming depends only on the job and its app, never on what the trip reads (a
        // redelivery claims the challenge it already holds).
        let batchKeys = Set(jobs.compactMap(\.keyBytes))
        let claims = challengeClaims(jobs, now: now)
        let outcomes = try store.batch { tx throws(PGError) in
            var cached = [[UInt8]: DeviceRecord]()
            for key in batchKeys { cached[key] = devices.get(key)?.record }
            let guessed = intelligenceQuery(jobs, stored: cached)
            let gathered = try timings.timed(\.reading) { () throws(PGError) in
                try tx.gather(
                    GatherRequest(
                        jobs: jobs.map(\.scopedJobId), keyIds: Array(batchKeys), intelligence: guessed, claims: claims.first?.map(\.claim) ?? []))
            }
            var challenges = [Int: ChallengeOutcome]()
            for (position, claim) in claims.first ?? [] { challenges[position] = gathered.challenges[claim.jobId] }
            for round in claims.dropFirst() {
                let settled = try timings.timed(\.reading) { () throws(PGError) in try tx.consumeChallenges(round.map(\.claim)) }
                for (position, claim) in round { challenges[position] = settled[claim.jobId] }
            }
            for key in batchKeys {
                if let record = gathered.devices[key] { devices.put(record) } else { devices.remove(key) }
            }
            // A redelivered job gets the stored verdict unchanged; other content under a jobId its app already
            // used gets its own rejection. A jobId repeated within the batch is decided once, and its other
            // messages get that decision's answer.
            var toDecide = [JobEntry]()
            var deciding = Set<ScopedJobId>()
            var previous = [Int: StoredVerdict]()
            for entry in jobs {
                if let stored = gathered.verdicts[entry.scopedJobId] {
                    previous[entry.position] = stored
                } else if deciding.insert(entry.scopedJobId).inserted {
                    toDecide.append(entry)
                }
            }
            let ledger = try timings.timed(\.reading) { () throws(PGError) in
                try intelligenceLedger(
                    toDecide, read: gathered.intelligence, for: guessed, cached: cached, fresh: gathered.devices, keys: batchKeys, in: tx)
            }
            let decided = decide(toDecide, now: now, challenges: challenges, ledger)
            let (stored, crossings) = try timings.timed(\.storing) { () throws(PGError) in try tx.settle(decided.decisions) }
            // Under the batch's locks no other writer stores its jobIds or moves its counters; were one to (a
            // session that takes no lock), the batch is run again whole: what that one stored answers then.
            guard stored.allSatisfy({ $0 }) else { throw .movedUnderLocks }
            return (previous: previous, decided: decided, crossings: crossings)
        }
        report(outcomes.crossings)
        for entry in jobs {
            if let stored = outcomes.previous[entry.position] { published[entry.position] = answer(entry, decided: stored, now) }
        }
        let decided = outcomes.decided
        for (i, entry) in decided.entries.enumerated() {
            published[entry.position] = verdict(entry, json: decided.decisions[i].verdictJSON)
            remember(entry, decided.decisions[i].change, parsed: decided.keys[i])
        }
        record(decided.decisions)
        // The other messages of a jobId repeated in the batch, answered by the decision of its first.
        let repeated = jobs.filter { published[$0.position] == nil }
        if !repeated.isEmpty {
            var standing = [ScopedJobId: StoredVerdict]()
            for (i, entry) in decided.entries.enumerated() {
                standing[entry.scopedJobId] = StoredVerdict(json: decided.decisions[i].verdictJSON, jobDigest: decided.decisions[i].jobDigest)
            }
            for entry in repeated {
                if let stored = standing[entry.scopedJobId] { published[entry.position] = answer(entry, decided: stored, now) }
            }
        }
        // Every consumed message must leave with something, or its offset would block the partition.
        return messages.enumerated().map { position, message in
            published[position] ?? deadLetter(message, .jobInvalid, "no decision could be made", now)
        }
    }

    // MARK: Classifying

    /// Size and JSON first (``RecordClassifier``): what is not a job becomes a dead letter (followed by a
    /// job_invalid verdict, published but not stored, when its jobId could still be read); a job with a jobId
    /// but unusable fields is decided job_invalid and stored like any other.
    private func classify(_ message: KafkaMessage, at position: Int, now: Timestamp) -> Classified {
        switch RecordClassifier(maxMessageBytes: settings.maxMessageBytes).classify(message) {
        case .deadLetter(let letter):
            var out = deadLetter(message, letter, now)
            if let answer = letter.answer, let jobId = letter.jobId {
                let rejection = verifier.rejection(answering: answer.fields, answer.failure, at: now)
                let key = answer.fields.keyId.map { OutboundBudget.key(Array($0.utf8)) }
                    ?? OutboundBudget.key(message.key, sha256: message.keySha256)
                out.then = [verdict(message, jobId: jobId, key: key, json: rejection.json.serialized())]
            }
            return .deadLetter(out)
        case .invalidJob(let jobId, let app, let failure):
            return .job(
                JobEntry(
                    position: position, message: message, jobId: jobId, scope: app, digest: Digest.sha256.hash(message.value),
                    content: .invalid(failure)))
        case .job(let job):
            let apps = apps.withLock { $0 }
            return .job(
                .job(
                    job, position: position, message: message, digest: Digest.sha256.hash(message.value), keyBytes: Self.keyBytes(of: job),
                    apps: apps, policy: { policy(for: $0, in: apps) }))
        }
    }

    func deadLetter(
        _ message: KafkaMessage, _ reason: DeadLetter.Reason, _ text: String, _ now: Timestamp? = nil, jobId: String? = nil
    ) -> Outbound {
        deadLetter(message, DeadLetter(reason: reason, message: text, jobId: jobId), now ?? verifier.clock.now())
    }

    /// The answer to a message whose job PostgreSQL refuses to store, deterministically (a value it
    /// rejects), once isolated from its batch: a dead letter with the jobId header, then the
    /// job_invalid/unstorable verdict, which is published but not stored (it cannot be), because a backend
    /// waits for it. A redelivery meets the same refusal and gets the same answer. A message that is no
    /// job gets the dead letter alone.
    public func unstorable(_ message: KafkaMessage, _ error: PGError) -> Outbound {
        let now = verifier.clock.now()
        guard case .job(let entry) = classify(message, at: 0, now: now) else {
            return deadLetter(message, .jobInvalid, "could not be stored: \(error.summary)", now)
        }
        var dead = deadLetter(message, .jobInvalid, "could not be stored: \(error.summary)", now, jobId: entry.jobId)
        let failure = VerificationFailure(.jobInvalid, .unstorable, "the database refused the job's values (\(error.summary))")
        let answer = entry.job.map { rejection($0, failure, now) } ?? verifier.rejection(jobId: entry.jobId, failure, at: now)
        dead.then = [verdict(entry, json: answer.json.serialized())]
        return dead
    }

    /// The dead letter of `message`, keyed by its bounded key and within the outbound budget.
    private func deadLetter(_ message: KafkaMessage, _ letter: DeadLetter, _ now: Timestamp) -> Outbound {
        metrics?.deadLetters.labels([letter.reason.rawValue]).increment()
        let key = OutboundBudget.key(message.key, sha256: message.keySha256)
        let headers: [(name: String, value: [UInt8])] = letter.jobId.map { [("jobId", Array($0.utf8))] } ?? []
        let room = settings.outboundBudget.bytes - OutboundBudget.size(key: key, value: [], headers: headers)
        return Outbound(
            source: message.topicPartition, sourceOffset: message.offset, topic: settings.deadLetterTopic, key: key,
            value: letter.json(for: message, at: now, maxBytes: room), headers: headers, original: message,
            kind: .deadLetter(letter.reason))
    }

    /// What replaces `out` when the broker refused it for good (`error`): the smallest dead letter of its
    /// original (nothing inlined), so that the original's offset still finishes.
    func smallestDeadLetter(replacing out: Outbound, error: String) -> Outbound {
        let reason: DeadLetter.Reason
        if case .deadLetter(let original) = out.kind { reason = original } else { reason = .jobInvalid }
        let letter = DeadLetter(reason: reason, message: "its \(out.kind.name) was refused by the broker (\(error))")
        metrics?.deadLetters.labels([reason.rawValue]).increment()
        let key = OutboundBudget.key(out.original.key, sha256: out.original.keySha256)
        var replacement = Outbound(
            source: out.source, sourceOffset: out.sourceOffset, topic: settings.deadLetterTopic, key: key,
            value: letter.smallestJSON(for: out.original, at: verifier.clock.now()), headers: [],
            original: out.original, kind: .smallestDeadLetter)
        replacement.then = out.then  // an unstorable job's verdict still follows its dead letter
        return replacement
    }

    /// A verdict message: keyed by keyId (an Android attestation's: its leaf key's, the keyId it has once
    /// verified; the message's key when the job's fields could not be read or it has none), bounded, with
    /// the jobId in a header.
    private func verdict(_ entry: JobEntry, json: String) -> Outbound {
        var keyId = entry.job?.keyId
        if keyId?.isEmpty == true { keyId = entry.keyBytes.map(Base64.encode) }
        let key = keyId.map { OutboundBudget.key(Array($0.utf8)) }
            ?? OutboundBudget.key(entry.message.key, sha256: entry.message.keySha256)
        return verdict(entry.message, jobId: entry.jobId, key: key, json: json)
    }

    /// The verdict on the verdicts topic, with the jobId and the job's valid `correlation-id`, `traceparent`
    /// and `tracestate` headers (``JobHeaders``), then the same message on the job's reply topic when it named
    /// an allowed one. Routing reads only the consumed message's headers, never the decision: a redelivery
    /// is answered where its own headers say.
    private func verdict(_ message: KafkaMessage, jobId: String, key: [UInt8]?, json: String) -> Outbound {
        let job = JobHeaders(message.headers, allKept: message.headerCount == message.headers.count)
        let headers = [(name: JobHeaders.jobId, value: Array(jobId.utf8))] + job.passedOn
        var out = Outbound(
            source: message.topicPartition, sourceOffset: message.offset, topic: settings.verdictsTopic,
            key: key, value: Array(json.utf8), headers: headers, original: message, kind: .verdict)
        if let (topic, partition) = replyRoute(job, jobId: jobId) {
            out.then = [Outbound(
                source: message.topicPartition, sourceOffset: message.offset, topic: topic, partition: partition,
                key: key, value: out.value, headers: headers, original: message, kind: .reply)]
        }
        return out
    }

    /// The reply topic (and partition) a job asked for when ATTEST_REPLY_TOPICS allows it and it is one of
    /// the topics replies may go to (``ReplyTopicsInUse``); nil otherwise, and a reply-to that is refused
    /// (not allowed, malformed, one topic too many) is logged and counted: its verdict still goes to the
    /// verdicts topic.
    private func replyRoute(_ job: JobHeaders, jobId: String) -> (topic: String, partition: Int32?)? {
        let (reason, detail): (String, String)
        switch job.reply {
        case .none:
            return nil
        case .topic(let topic, let partition) where settings.replyTopics.allows(topic):
            if settings.replyTopicsInUse.admit(topic) { return (topic, partition) }
            (reason, detail) = ("too_many_topics", "replies already go to \(settings.replyTopicsInUse.limit) topics; \(topic) is one more")
        case .topic(let topic, _):
            (reason, detail) = ("not_allowed", "\(topic) is not in ATTEST_REPLY_TOPICS")
        case .malformed(let why):
            (reason, detail) = ("malformed", why)
        }
        metrics?.repliesRefused.labels([reason]).increment()
        logger?.warning("no reply: the job's reply-to is refused", [
            ("jobId", .string(jobId)), ("reason", .string(reason)), ("detail", .string(detail)),
        ] + job.logFields)
        return nil
    }

    // MARK: Apps

    private func refreshApps(now: Timestamp, force: Bool) throws(PGError) {
        let loadedAt = apps.withLock { $0.loadedAt }
        if let loadedAt, now < loadedAt.adding(seconds: force ? 1 : Self.appRefreshSeconds) { return }
        let policies = try store.apps()
        apps.withLock { $0 = RegisteredApps(policies, loadedAt: now) }
    }

    /// The policy registered for exactly the job's (teamId, bundleId) (an Android job's: its package's app),
    /// the default one for other valid pairs when unknown apps are admitted (an Android package's with its
    /// signers unchecked), or nil.
    func policy(for job: Job, in apps: RegisteredApps) -> AppPolicy? {
        if let app = apps.policies[job.app] { return app }
        guard settings.admitUnknownApps else { return nil }
        var app = AppPolicy(teamId: job.teamId, bundleId: job.bundleId, environments: settings.defaultEnvironments)
        if let android = job.android { app.android = AndroidPolicy(packageName: android.packageName, signingCertificateDigests: nil) }
        return app
    }

    /// The key a job's jobs are grouped by and its device read under: its keyId's bytes, or for an Android
    /// attestation the hash of its leaf's key (the keyId it will have), so a key's attestation and requests
    /// in one batch are decided in order. nil when there is none (the job fails its object check).
    static func keyBytes(of job: Job) -> [UInt8]? {
        if let android = job.android, case .attestation(let request) = android.payload { return request.leafKeyId }
        return Base64.decode(job.keyId).flatMap { $0.count == 32 ? $0 : nil }
    }

    func rejection(_ job: Job, _ failure: VerificationFailure, _ now: Timestamp) -> Verdict {
        var verdict = Verdict(job: job, verifiedAt: now)
        verdict.failure = failure
        return verdict
    }

    func decision(
        _ verdict: Verdict, job: Job?, jobId: String, source: Decision.Source, change: Decision.DeviceChange,
        _ intelligence: IntelligenceChange? = nil, scope: AppIdentity = .none
    ) -> Decision {
        // The verdict's scope: the job's app, or for a job that could not be read the pair it names, if valid.
        Decision(
            jobId: jobId, app: job?.app ?? scope, kind: job?.kind.rawValue, keyId: job == nil ? nil : verdict.keyId,
            ok: verdict.ok, code: verdict.failure?.code.rawValue, reason: verdict.failure?.reason.rawValue,
            verdictJSON: verdict.json.serialized(), receivedAt: job?.receivedAt, decidedAt: verdict.verifiedAt,
            source: source, change: change, intelligence: intelligence,
            partitionAt: Decision.partitionTime(receivedAt: job?.receivedAt, decidedAt: verdict.verifiedAt, bounds: verifier.timeBounds))
    }

    /// Counts the batch's stored decisions, one series lookup per kind, code and reason found in it (a lookup
    /// hashes its labels and allocates: once per job, it was a visible part of the batch's bookkeeping).
    private func record(_ decisions: [Decision]) {
        guard let metrics else { return }
        struct Labels: Hashable {
            let kind: String?, code: String?, reason: String?
        }
        var counts = [Labels: Int]()
        for i in decisions.indices {
            counts[Labels(kind: decisions[i].kind, code: decisions[i].code, reason: decisions[i].reason), default: 0] += 1
            if let receivedAt = decisions[i].receivedAt {
                metrics.receivedToVerdict.observe(Double(decisions[i].decidedAt.microseconds - receivedAt.microseconds) / 1e6)
            }
        }
        for (labels, count) in counts {
            metrics.verdicts.labels([labels.kind ?? "unknown", labels.code ?? "ok", labels.reason ?? "ok"]).increment(by: Double(count))
        }
    }

    /// The answer to a job whose jobId its app has a stored verdict for: that verdict, unchanged, when it
    /// decided this very message (a redelivery), else a reuse.
    private func answer(_ entry: JobEntry, decided previous: StoredVerdict, _ now: Timestamp) -> Outbound {
        guard previous.decided(digest: entry.digest) else { return reuse(entry, now) }
        metrics?.republished.increment()
        return verdict(entry, json: previous.json)
    }

    /// The answer to a job reusing a jobId its app already used for other content: a job_invalid /
    /// job_id_reused rejection built from this job alone (never another job's verdict), published but not
    /// stored, so the first decision stands; the producer that reused the id is worth an operator's look.
    private func reuse(_ entry: JobEntry, _ now: Timestamp) -> Outbound {
        let failure = VerificationFailure(.jobInvalid, .jobIdReused, "jobId was already decided for other content of this app")
        let refusal = entry.job.map { rejection($0, failure, now) } ?? verifier.rejection(jobId: entry.jobId, failure, at: now)
        metrics?.jobIdReused.increment()
        logger?.warning("jobId reused with other content; the first decision stands", [
            ("jobId", .string(entry.jobId)), ("topic", .string(entry.message.topic)),
            ("partition", .int(Int64(entry.message.partition))), ("offset", .int(entry.message.offset)),
        ] + JobHeaders(entry.message.headers).logFields)
        return verdict(entry, json: refusal.json.serialized())
    }

    /// After a decision is stored, the cache reflects it for the next batches.
    private func remember(_ entry: JobEntry, _ change: Decision.DeviceChange, parsed: DeviceCache.DeviceKey?) {
        guard let job = entry.job else { return }
        switch change {
        case .none, .used:
            break
        case .attested(let device):
            let previous = devices.get(device.keyId)?.record
            devices.put(
                DeviceRecord(
                    keyId: device.keyId, teamId: device.teamId, bundleId: device.bundleId, publicKey: device.publicKey,
                    counter: previous.flatMap { $0.publicKey == device.publicKey ? $0.counter : nil } ?? 0,
                    environment: device.environment, deviceId: device.deviceId ?? previous?.deviceId ?? "",
                    fingerprint: job.metadata["deviceFingerprint"] ?? previous?.fingerprint),
                parsed: parsed)
        case .advanced(let keyId, let counter):
            if var record = devices.get(keyId)?.record {
                record.counter = max(record.counter, counter)
                devices.put(record)
            }
        }
    }
}
