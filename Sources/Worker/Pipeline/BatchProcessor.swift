import AttestCore
import AttestCrypto
import AttestJobs
import AttestTokens
import AttestVerifier
import Dispatch
import KafkaClient
import Observability
import PostgresClient
import Synchronization

/// Decides a batch of consumed messages and stores the decisions, returning what to publish.
///
/// Per batch: classify (dead letters, invalid jobs), one read for stored verdicts and devices, one for the
/// devices' risk histories, monthly counts and quotas, one statement consuming the worker-issued challenges
/// the batch presents (``ChallengeStore``), decide in parallel across keys (each key's jobs in order, each
/// seeing the state its predecessors leave), one transaction for every decision (verdicts, devices, counts,
/// scores), then the messages to publish in consumption order. A jobId is decided once per app: a
/// redelivered job gets the verdict stored for it, unchanged, and other content under a decided jobId gets
/// a job_id_reused rejection of its own; an assertion that lost a counter race is decided again against the
/// stored counter.
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

        public init(
            verdictsTopic: String, deadLetterTopic: String, maxMessageBytes: Int = 256 * 1024,
            admitUnknownApps: Bool = false, defaultEnvironments: EnvironmentPolicy = .production, threads: Int = 2,
            tokenSigner: TokenSigner? = nil, outboundBudget: OutboundBudget = .standard, replyTopics: ReplyTopics = .none
        ) {
            self.outboundBudget = outboundBudget
            self.replyTopics = replyTopics
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
    private let apps = Mutex<(policies: [AppIdentity: AppPolicy], loadedAt: Timestamp?)>(([:], nil))
    /// Apps are re-read this often (and on a miss), so `attest-worker app` changes reach running workers.
    static let appRefreshSeconds: Int64 = 5
    /// Rounds of re-deciding after lost counter races before the batch gives up (each round reads the
    /// stored state, so one round normally settles it).
    static let maxRounds = 8

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

    /// One consumed message on its way to being published.
    struct Item: Sendable {
        let message: KafkaMessage
        /// Set when the message is a job (a JSON object with a jobId), valid or not.
        var jobId: String?
        /// The app the jobId belongs to: the job's pair when its teamId and bundleId are valid, else none.
        var scope = AppIdentity.none
        /// SHA-256 of the message (jobs only): what tells a redelivery from a reused jobId.
        var digest: [UInt8] = []
        /// Set when the job's fields are valid.
        var job: Job?
        /// The job_invalid failure of a job with unusable fields.
        var invalid: VerificationFailure?
        /// The device key of a valid job whose keyId decodes to 32 bytes.
        var keyBytes: [UInt8]?
        var decision: Decision?
        var outbound: Outbound?
        /// How the job's worker-issued challenge was settled; nil when it made no claim.
        var challenge: ChallengeOutcome?

        var scopedJobId: ScopedJobId? { jobId.map { ScopedJobId(app: scope, jobId: $0) } }
    }

    /// Decides and stores `messages`; throws only infrastructure errors (after the store's own retries),
    /// in which case nothing of the batch may be acknowledged.
    public func process(_ messages: [KafkaMessage]) throws(PGError) -> [Outbound] {
        var items = messages.map { Item(message: $0) }
        let now = verifier.clock.now()
        for i in items.indices { classify(&items[i], now: now) }

        let jobs = items.indices.filter { items[$0].jobId != nil }
        let unknownKeys = Set(jobs.compactMap { items[$0].keyBytes }).filter { devices.get($0) == nil }
        let (stored, fetched) = try store.prefetch(jobs: jobs.map { items[$0].scopedJobId! }, keyIds: Array(unknownKeys))
        for record in fetched.values { devices.put(record) }
        try refreshApps(now: now, force: false)

        // A redelivered job gets the stored verdict unchanged; other content under a jobId its app already used
        // gets its own rejection. A jobId repeated within the batch is decided once, and its other messages are
        // answered by whichever decision stands once it is stored (another worker's may have come first).
        var toDecide = [Int]()
        var deciding = Set<ScopedJobId>()
        for i in jobs {
            let key = items[i].scopedJobId!
            if let previous = stored[key] {
                items[i].outbound = answer(items[i], decided: previous, now)
            } else if deciding.insert(key).inserted {
                toDecide.append(i)
            }
        }
        if toDecide.contains(where: { items[$0].job.map { policy(for: $0) == nil } ?? false }) {
            try refreshApps(now: now, force: true)
        }
        try consumeChallenges(&items, toDecide, now: now)
        let ledger = try intelligenceLedger(items, toDecide)
        decide(&items, toDecide, now: now, ledger)

        var standing = [ScopedJobId: StoredVerdict]()
        var round = toDecide
        for _ in 0..<Self.maxRounds where !round.isEmpty {
            let (outcomes, crossings) = try store.commit(round.map { items[$0].decision! })
            report(crossings)
            var conflicts = [Int]()
            for (i, outcome) in zip(round, outcomes) {
                switch outcome {
                case .stored:
                    let decision = items[i].decision!
                    items[i].outbound = verdict(items[i], json: decision.verdictJSON)
                    standing[items[i].scopedJobId!] = StoredVerdict(json: decision.verdictJSON, jobDigest: decision.jobDigest)
                    remember(items[i])
                    record(decision)
                case .alreadyDecided(let previous):
                    // Another worker stored this jobId of the app meanwhile.
                    items[i].outbound = answer(items[i], decided: previous, now)
                    standing[items[i].scopedJobId!] = previous
                case .counterConflict:
                    conflicts.append(i)
                }
            }
            if !conflicts.isEmpty {
                // Another writer moved these counters: read the stored state and decide again.
                let keys = Set(conflicts.compactMap { items[$0].keyBytes })
                for key in keys { devices.remove(key) }
                let (_, fresh) = try store.prefetch(jobs: [], keyIds: Array(keys))
                for record in fresh.values { devices.put(record) }
                ledger.forgetScores(of: conflicts.compactMap { items[$0].decision?.intelligence?.device })
                decide(&items, conflicts, now: now, ledger)
            }
            round = conflicts
        }
        guard round.isEmpty else {
            throw PGError(code: .client, message: "counter races did not settle after \(Self.maxRounds) rounds", isConnectionLost: false)
        }
        for i in jobs where items[i].outbound == nil {
            if let decided = standing[items[i].scopedJobId!] { items[i].outbound = answer(items[i], decided: decided, now) }
        }
        // Every consumed message must leave with something, or its offset would block the partition.
        for i in items.indices where items[i].outbound == nil {
            items[i].outbound = deadLetter(items[i].message, .jobInvalid, "no decision could be made", now)
        }
        return items.map { $0.outbound! }
    }

    // MARK: Classifying

    /// Size and JSON first (``RecordClassifier``): what is not a job becomes a dead letter (followed by a
    /// job_invalid verdict, published but not stored, when its jobId could still be read); a job with a jobId
    /// but unusable fields is decided job_invalid and stored like any other.
    private func classify(_ item: inout Item, now: Timestamp) {
        switch RecordClassifier(maxMessageBytes: settings.maxMessageBytes).classify(item.message) {
        case .deadLetter(let letter):
            var out = deadLetter(item.message, letter, now)
            if let answer = letter.answer, let jobId = letter.jobId {
                var rejection = verifier.rejection(jobId: jobId, answer.failure)
                (rejection.teamId, rejection.bundleId, rejection.keyId) = (answer.fields.teamId, answer.fields.bundleId, answer.fields.keyId)
                let key = answer.fields.keyId.map { OutboundBudget.key(Array($0.utf8)) }
                    ?? OutboundBudget.key(item.message.key, sha256: item.message.keySha256)
                out.then = [verdict(item.message, jobId: jobId, key: key, json: rejection.json.serialized())]
            }
            item.outbound = out
        case .invalidJob(let jobId, let app, let failure):
            item.jobId = jobId
            item.scope = app
            item.digest = Digest.sha256.hash(item.message.value)
            item.invalid = failure
        case .job(let job):
            item.jobId = job.jobId
            item.digest = Digest.sha256.hash(item.message.value)
            item.job = job
            item.scope = job.app
            if let bytes = Base64.decode(job.keyId), bytes.count == 32 { item.keyBytes = bytes }
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
        var item = Item(message: message)
        let now = verifier.clock.now()
        classify(&item, now: now)
        var dead = deadLetter(message, .jobInvalid, "could not be stored: \(error.summary)", now, jobId: item.jobId)
        guard let jobId = item.jobId else { return dead }
        let failure = VerificationFailure(.jobInvalid, .unstorable, "the database refused the job's values (\(error.summary))")
        let answer = item.job.map { rejection($0, failure, now) } ?? verifier.rejection(jobId: jobId, failure)
        dead.then = [verdict(item, json: answer.json.serialized())]
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

    /// A verdict message: keyed by keyId (or the message's key when the job's fields could not be read),
    /// bounded, with the jobId in a header.
    private func verdict(_ item: Item, json: String) -> Outbound {
        let key = item.job.map { OutboundBudget.key(Array($0.keyId.utf8)) }
            ?? OutboundBudget.key(item.message.key, sha256: item.message.keySha256)
        return verdict(item.message, jobId: item.jobId!, key: key, json: json)
    }

    /// The verdict on the verdicts topic, with the jobId and the job's valid `correlation-id`, `traceparent`
    /// and `tracestate` headers (``JobHeaders``), then the same message on the job's reply topic when it named
    /// an allowed one. Routing reads only the consumed message's headers, never the decision: a redelivery
    /// is answered where its own headers say.
    private func verdict(_ message: KafkaMessage, jobId: String, key: [UInt8]?, json: String) -> Outbound {
        let job = JobHeaders(message.headers)
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

    /// The reply topic (and partition) a job asked for when ATTEST_REPLY_TOPICS allows it; nil otherwise,
    /// and a reply-to that is refused (not allowed, malformed) is logged and counted: its verdict still goes
    /// to the verdicts topic.
    private func replyRoute(_ job: JobHeaders, jobId: String) -> (topic: String, partition: Int32?)? {
        let (reason, detail): (String, String)
        switch job.reply {
        case .none:
            return nil
        case .topic(let topic, let partition) where settings.replyTopics.allows(topic):
            return (topic, partition)
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
        apps.withLock { $0 = (policies, now) }
    }

    /// The policy registered for exactly the job's (teamId, bundleId), the default one for other valid pairs
    /// when unknown apps are admitted, or nil.
    func policy(for job: Job) -> AppPolicy? {
        if let app = apps.withLock({ $0.policies[job.app] }) { return app }
        guard settings.admitUnknownApps else { return nil }
        return AppPolicy(teamId: job.teamId, bundleId: job.bundleId, environments: settings.defaultEnvironments)
    }

    // MARK: Deciding

    /// Decides `indices` in parallel across keys; the jobs of one key in order, each seeing the device state
    /// the previous one leaves (an attestation followed by its first assertions in the same batch).
    private func decide(_ items: inout [Item], _ indices: [Int], now: Timestamp, _ ledger: IntelligenceLedger) {
        var groups = [[UInt8]: [Int]]()
        var order = [[UInt8]]()
        for i in indices {
            let key = items[i].keyBytes ?? Array((items[i].job?.keyId ?? items[i].jobId!).utf8)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(i)
        }
        let snapshot = items
        let results = Mutex<[(Int, Decision)]>([])
        let work = order.map { groups[$0]! }
        // `threads` lanes (ATTEST_WORKERS), each taking the next key group until none is left: groups differ
        // in cost (an attestation is several assertions' worth), so a fixed split leaves lanes idle.
        let lanes = max(1, min(settings.threads, work.count))
        let next = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: lanes) { _ in
            var decided = [(Int, Decision)]()
            while case let g = next.add(1, ordering: .relaxed).oldValue, g < work.count {
                var state: DeviceState? = nil
                for i in work[g] {
                    var decision = decideOne(snapshot[i], now: now, state: &state, ledger)
                    decision.jobDigest = snapshot[i].digest
                    decided.append((i, decision))
                }
            }
            results.withLock { $0 += decided }
        }
        for (i, decision) in results.withLock({ $0 }) { items[i].decision = decision }
    }

    /// A key's device as the batch has left it so far.
    private struct DeviceState {
        var record: DeviceRecord
        var key: ECPublicKey
    }

    /// - Parameter now: the batch's clock reading, the one its challenge claims were made against.
    private func decideOne(_ item: Item, now: Timestamp, state: inout DeviceState?, _ ledger: IntelligenceLedger) -> Decision {
        let source = Decision.Source(topic: item.message.topic, partition: item.message.partition, offset: item.message.offset)
        guard let job = item.job else {
            let verdict = verifier.rejection(jobId: item.jobId, item.invalid!)
            return decision(verdict, job: nil, jobId: item.jobId!, source: source, change: .none, scope: item.scope)
        }
        let cached = state?.record ?? item.keyBytes.flatMap { devices.get($0)?.record }
        // The key's device as this app knows it: what its identity and risk history go by.
        let attested = cached.flatMap { $0.teamId == job.teamId && $0.bundleId == job.bundleId ? $0 : nil }
        if let failure = verifier.checkReceivedAt(job, now: now, brokerTimestampMs: item.message.timestampMs) {
            var verdict = rejection(job, failure, now)
            let intelligence = ledger.assess(&verdict, job: job, keyBytes: item.keyBytes, stored: attested, app: nil)
            return decision(verdict, job: job, jobId: job.jobId, source: source, change: .none, intelligence)
        }
        guard let app = policy(for: job) else {
            let failure = VerificationFailure(.jobInvalid, .unknownApp, "app \(job.teamId).\(job.bundleId) is not registered")
            var verdict = rejection(job, failure, now)
            let intelligence = ledger.assess(&verdict, job: job, keyBytes: item.keyBytes, stored: attested, app: nil)
            return decision(verdict, job: job, jobId: job.jobId, source: source, change: .none, intelligence)
        }
        if app.challenges == .worker, let failure = challengeFailure(item, job) {
            var verdict = rejection(job, failure, now)
            let intelligence = ledger.assess(&verdict, job: job, keyBytes: item.keyBytes, stored: attested, app: app)
            return decision(verdict, job: job, jobId: job.jobId, source: source, change: .none, intelligence)
        }
        switch job.payload {
        case .attestation(let request):
            var (verdict, verified) = timed(.attestation) { verifier.decide(request, of: job, policy: app.environments, now: now) }
            let intelligence = ledger.assess(&verdict, job: job, keyBytes: item.keyBytes, stored: attested, app: app)
            guard verdict.ok, let verified else {
                return decision(verdict, job: job, jobId: job.jobId, source: source, change: .none, intelligence)
            }
            let record = DeviceRecord(
                keyId: verified.keyId, teamId: job.teamId, bundleId: job.bundleId, publicKey: verified.publicKey,
                counter: cached?.publicKey == verified.publicKey ? cached!.counter : 0,
                environment: verified.environment.rawValue, deviceId: intelligence.deviceId,
                fingerprint: job.metadata["deviceFingerprint"] ?? cached?.fingerprint)
            state = DeviceState(record: record, key: verified.key)
            sign(&verdict, app: app, intelligence)
            let device = Decision.AttestedDevice(
                keyId: verified.keyId, teamId: job.teamId, bundleId: job.bundleId, publicKey: verified.publicKey,
                environment: verified.environment.rawValue, receipt: verified.receipt.der, deviceId: intelligence.deviceId,
                metadata: job.metadata)
            return decision(verdict, job: job, jobId: job.jobId, source: source, change: .attested(device), intelligence)
        case .assertion(let request):
            if state == nil, let keyBytes = item.keyBytes, let cached = devices.get(keyBytes) {
                state = DeviceState(record: cached.record, key: cached.key)
            }
            // A key attested for another app is unknown to this one.
            let known = state.flatMap { $0.record.teamId == job.teamId && $0.record.bundleId == job.bundleId ? $0 : nil }
            let device = known.map { StoredDevice(publicKey: $0.key, counter: $0.record.counter) }
            var (verdict, verified) = timed(.assertion) { verifier.decide(request, of: job, device: device, now: now) }
            if verified != nil, let record = known?.record, let failure = Self.environmentFailure(record, app) {
                verdict.failure = failure
                verdict.counter = nil
                verdict.environment = AppAttestEnvironment(rawValue: record.environment)
                verified = nil
            }
            let intelligence = ledger.assess(&verdict, job: job, keyBytes: item.keyBytes, stored: known?.record, app: app)
            guard let verified else {
                return decision(verdict, job: job, jobId: job.jobId, source: source, change: .none, intelligence)
            }
            state?.record.counter = verified.counter
            sign(&verdict, app: app, intelligence)
            return decision(
                verdict, job: job, jobId: job.jobId, source: source,
                change: .advanced(keyId: verified.keyId, counter: verified.counter), intelligence)
        }
    }

    /// Why an authentic assertion of `record`'s key is refused under the app's current policy, or nil: a
    /// key keeps the environment it was attested in, and the app may since have stopped admitting it (the
    /// attestation check's code and reason, so both paths read alike).
    static func environmentFailure(_ record: DeviceRecord, _ app: AppPolicy) -> VerificationFailure? {
        if let environment = AppAttestEnvironment(rawValue: record.environment), app.environments.allows(environment) { return nil }
        return VerificationFailure(.appleValidationFailed, .environmentNotAllowed, "\(record.environment) keys are not accepted")
    }

    /// Adds the verdict token when keys are configured (accepted verdicts only; `attachToken` leaves others),
    /// with the device id and risk category the verdict reports.
    private func sign(_ verdict: inout Verdict, app: AppPolicy, _ intelligence: IntelligenceChange) {
        guard let signer = settings.tokenSigner else { return }
        do {
            try verdict.attachToken(
                signer: signer, lifetimeSeconds: Int64(app.tokenLifetimeSeconds), deviceId: intelligence.deviceId,
                riskCategory: intelligence.riskCategory.rawValue)
        } catch {
            // OpenSSL refusing to sign means a broken process: the verdict goes out without a token, counted.
            metrics?.errors.labels(["token"]).increment()
        }
    }

    /// Runs one verification, timed per kind when metrics are on.
    private func timed<T>(_ kind: Job.Kind, _ verify: () -> T) -> T {
        guard let metrics else { return verify() }
        return metrics.verificationSeconds.labels([kind.rawValue]).time(verify)
    }

    private func rejection(_ job: Job, _ failure: VerificationFailure, _ now: Timestamp) -> Verdict {
        var verdict = Verdict(job: job, verifiedAt: now)
        verdict.failure = failure
        return verdict
    }

    private func decision(
        _ verdict: Verdict, job: Job?, jobId: String, source: Decision.Source, change: Decision.DeviceChange,
        _ intelligence: IntelligenceChange? = nil, scope: AppIdentity = .none
    ) -> Decision {
        // The verdict's scope: the job's app, or for a job that could not be read the pair it names, if valid.
        Decision(
            jobId: jobId, app: job?.app ?? scope, kind: job?.kind.rawValue, keyId: job?.keyId,
            ok: verdict.ok, code: verdict.failure?.code.rawValue, reason: verdict.failure?.reason.rawValue,
            verdictJSON: verdict.json.serialized(), receivedAt: job?.receivedAt, decidedAt: verdict.verifiedAt,
            source: source, change: change, intelligence: intelligence)
    }

    private func record(_ decision: Decision) {
        guard let metrics else { return }
        metrics.verdicts.labels([decision.kind ?? "unknown", decision.code ?? "ok", decision.reason ?? "ok"]).increment()
        if let receivedAt = decision.receivedAt {
            metrics.receivedToVerdict.observe(Double(decision.decidedAt.microseconds - receivedAt.microseconds) / 1e6)
        }
    }

    /// The answer to a job whose jobId its app has a stored verdict for: that verdict, unchanged, when it
    /// decided this very message (a redelivery), else a reuse.
    private func answer(_ item: Item, decided previous: StoredVerdict, _ now: Timestamp) -> Outbound {
        guard previous.decided(digest: item.digest) else { return reuse(item, now) }
        metrics?.republished.increment()
        return verdict(item, json: previous.json)
    }

    /// The answer to a job reusing a jobId its app already used for other content: a job_invalid /
    /// job_id_reused rejection built from this job alone (never another job's verdict), published but not
    /// stored, so the first decision stands; the producer that reused the id is worth an operator's look.
    private func reuse(_ item: Item, _ now: Timestamp) -> Outbound {
        let failure = VerificationFailure(.jobInvalid, .jobIdReused, "jobId was already decided for other content of this app")
        let refusal = item.job.map { rejection($0, failure, now) } ?? verifier.rejection(jobId: item.jobId, failure)
        metrics?.jobIdReused.increment()
        logger?.warning("jobId reused with other content; the first decision stands", [
            ("jobId", .string(item.jobId ?? "")), ("topic", .string(item.message.topic)),
            ("partition", .int(Int64(item.message.partition))), ("offset", .int(item.message.offset)),
        ] + JobHeaders(item.message.headers).logFields)
        return verdict(item, json: refusal.json.serialized())
    }

    /// After a decision is stored, the cache reflects it for the next batches.
    private func remember(_ item: Item) {
        guard let decision = item.decision, let job = item.job else { return }
        switch decision.change {
        case .none:
            break
        case .attested(let device):
            let previous = devices.get(device.keyId)?.record
            devices.put(
                DeviceRecord(
                    keyId: device.keyId, teamId: device.teamId, bundleId: device.bundleId, publicKey: device.publicKey,
                    counter: previous?.publicKey == device.publicKey ? previous!.counter : 0,
                    environment: device.environment, deviceId: device.deviceId ?? previous?.deviceId ?? "",
                    fingerprint: job.metadata["deviceFingerprint"] ?? previous?.fingerprint))
        case .advanced(let keyId, let counter):
            if var record = devices.get(keyId)?.record {
                record.counter = max(record.counter, counter)
                devices.put(record)
            }
        }
    }
}
