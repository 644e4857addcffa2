import AttestJobs
import DeviceIntelligence
import PostgresClient

extension AttestStore {
    /// A batch as one transaction on one connection: `BEGIN` and the locks travel with the gather's reads,
    /// the writes with `COMMIT`, so the batch still costs two round trips. After a transient failure
    /// `run` opens a fresh connection and runs `body` again whole (the server rolled the first attempt
    /// back, its challenge claims included).
    public func batch<T>(_ body: (any BatchTransaction) throws(PGError) -> T) throws(PGError) -> T {
        let value: T? = try connection.run { c throws(PGError) in
            let transaction = StoreTransaction(connection: c)
            let started = ContinuousClock.now
            defer { deciding += ContinuousClock.now - started - transaction.inDatabase }
            let value: T
            do throws(PGError) {
                value = try body(transaction)
            } catch {
                c.rollbackIfOpen()
                throw error
            }
            guard transaction.committed || !transaction.begun else {
                c.rollbackIfOpen()
                return nil
            }
            return value
        }
        // Thrown outside `run`, which would retry it: running the same body again cannot help.
        guard let value else { throw PGError(code: .transactionMisuse, message: "a batch gathered and did not settle; rolled back") }
        return value
    }
}

/// ``BatchTransaction`` on one PostgreSQL connection.
final class StoreTransaction: BatchTransaction {
    let connection: PGConnection
    /// Time spent in this transaction's round trips.
    private(set) var inDatabase = Duration.zero
    private(set) var begun = false
    private(set) var committed = false

    init(connection: PGConnection) { self.connection = connection }

    /// Every statement pipelined, each looking rows up by key. The locks come first (``VerdictsTable/BatchLocks``):
    /// the jobIds, so a verdict another worker is storing for one of them is committed before this reads
    /// the stored verdicts; the keys, so no other worker moves a counter or an assertion count between
    /// this read and the settle. The claims settle as ``ChallengeStore/consume(_:on:)`` would.
    func gather(_ request: GatherRequest) throws(PGError) -> Gathered {
        precondition(!begun, "a batch transaction gathers once")
        var pipeline = PGPipeline()
        pipeline.append(PGBegin())
        pipeline.append(VerdictsTable.BatchLocks(jobs: request.jobs, keyIds: request.keyIds))
        let verdicts = pipeline.append(VerdictsTable.Stored(jobs: request.jobs))
        let devices = pipeline.append(DevicesTable.ByKeys(keyIds: request.keyIds))
        let query = request.intelligence
        let intelligence = query.isEmpty ? nil : (
            pipeline.append(DeviceRiskTable.Histories(Array(query.devices))), pipeline.append(MonthlyCountsTable.Counted(Array(query.counted))),
            pipeline.append(MonthlyCountsTable.Quotas(Array(query.months)))
        )
        let claims = request.claims.isEmpty ? nil : pipeline.append(ChallengesTable.Consume(request.claims))
        begun = true
        let results = try timed { () throws(PGError) in try connection.pipeline(pipeline) }
        return Gathered(
            verdicts: Dictionary(results[verdicts].map { ($0.job, $0.verdict) }, uniquingKeysWith: { _, last in last }),
            devices: Dictionary(results[devices].map { ($0.keyId, $0) }, uniquingKeysWith: { _, last in last }),
            intelligence: intelligence.map { AttestStore.snapshot(results[$0.0], results[$0.1], results[$0.2]) } ?? IntelligenceSnapshot(),
            challenges: claims.map { results[$0] } ?? [:])
    }

    func intelligence(_ query: IntelligenceQuery) throws(PGError) -> IntelligenceSnapshot {
        try timed { () throws(PGError) in try AttestStore.intelligence(query, on: connection) }
    }

    func consumeChallenges(_ claims: [ChallengeClaim]) throws(PGError) -> [String: ChallengeOutcome] {
        try timed { () throws(PGError) in try ChallengeStore.consume(claims, on: connection) }
    }

    func settle(_ decisions: [Decision]) throws(PGError) -> (stored: [Bool], crossings: [QuotaCrossing]) {
        precondition(begun && !committed, "a batch transaction settles once, after its gather")
        var pipeline = PGPipeline()
        let writes = DecisionWrites(decisions, into: &pipeline)
        pipeline.append(PGCommit())
        let results: PGPipeline.Results
        do throws(PGError) {
            results = try timed { () throws(PGError) in try connection.pipeline(pipeline) }
        } catch where error.isVerdictKeyConflict {
            throw .movedUnderLocks
        }
        committed = true
        return writes.outcomes(results)
    }

    private func timed<T>(_ body: () throws(PGError) -> T) throws(PGError) -> T {
        let started = ContinuousClock.now
        defer { inDatabase += ContinuousClock.now - started }
        return try body()
    }
}

/// A batch's writes in a pipeline, with a handful of statements whatever the batch size (statement start-up
/// and constraint checks, not rows, were most of PostgreSQL's time when each decision had its own): the
/// accepted attestations in rounds, each one set-based statement over distinct keys (every key's first
/// attestation, then the second of those attested twice, …, so a re-attestation refreshes the row the
/// one before it left, in batch order; almost every batch is one round), then every other decision in one
/// set-based statement, then the risk rows that change, then the month's counts. Attestations go first so
/// a device's assertions in the same batch find it. Every statement takes its row locks in key order
/// (the set-based statements sort inside, risk rows by app and identity; a row's own decisions keep their
/// batch order), so two workers' batches wait for each other but cannot deadlock on the rows of one table;
/// a deadlock that still happens (across tables, or against another session) is transient, and the batch
/// is retried.
struct DecisionWrites {
    private let count: Int
    private let others: [Int]
    private let rest: PGPipeline.Handle<[Int]>?
    private let crossings: PGPipeline.Handle<[QuotaCrossing]>?

    init(_ decisions: [Decision], into pipeline: inout PGPipeline) {
        count = decisions.count
        let attested = decisions.indices.filter { decisions[$0].attestedDevice != nil }
        others = decisions.indices.filter { decisions[$0].attestedDevice == nil }
        for round in writeRounds(attested, row: { decisions[$0].attestedDevice!.keyId }) {
            pipeline.append(VerdictsTable.Attestations(round.map { decisions[$0] }))
        }
        rest = others.isEmpty ? nil : pipeline.append(VerdictsTable.Decisions(others.map { decisions[$0] }))
        crossings = IntelligenceWrites.append(decisions, to: &pipeline)
    }

    /// Whether each decision was stored (not: a counter conflict, see ``VerdictsTable/Decisions``) and the
    /// quota thresholds the batch's newly counted devices crossed.
    func outcomes(_ results: PGPipeline.Results) -> (stored: [Bool], crossings: [QuotaCrossing]) {
        // A statement that ran stored every verdict it was given but the assertions it names.
        var stored = [Bool](repeating: true, count: count)
        for position in rest.map({ results[$0] }) ?? [] { stored[others[position]] = false }
        return (stored, crossings.map { results[$0] } ?? [])
    }
}

extension PGError {
    /// A batch met a jobId or counter that a writer taking no lock moved after its gather: transient, so
    /// the batch runs again whole, and what that writer stored answers then.
    public static let movedUnderLocks = PGError(code: .client, message: "a jobId or counter moved under the batch's locks")

    /// A unique violation of a verdicts partition's key (`verdicts_…_pkey`, as partitions made by the
    /// worker and by migration 0011 are named): a verdict of the same jobId and partition time was stored
    /// after the gather found none.
    var isVerdictKeyConflict: Bool {
        guard sqlState == "23505", let constraint else { return false }
        return constraint.hasPrefix("verdicts") && constraint.hasSuffix("_pkey")
    }
}
