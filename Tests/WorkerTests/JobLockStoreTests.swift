import AttestCore
import AttestJobs
import Foundation
import PostgresClient
import Synchronization
import Testing
@testable import Store
@testable import Worker

/// One verdict per jobId across partitions without a trigger (migration 0013), against the ops/stack
/// PostgreSQL: the commit locks its jobIds before it writes, so a batch writing a jobId that another,
/// uncommitted transaction is storing under another partition time waits for it and then finds its verdict.
@Suite struct JobLockStoreTests {
    typealias R = PartitionRetentionStoreTests

    @Test func aConcurrentDecisionOfAJobIdInAnotherPartitionWaitsAndFindsTheFirstOnBothWritePaths() throws {
        let db = try R.Schema()
        let first = Timestamp(seconds: 1_796_083_200)
        let later = first.adding(seconds: 3 * 86_400)
        for day in [first, later] {
            _ = try db.connection.execute(PartitionsTable.Create(table: "verdicts", lower: day, upper: day.adding(seconds: 86_400)))
        }
        // The first decisions of j1 and j2, stored by a transaction left open (as the commit writes them).
        var attested = ScopedVerdictStoreTests.attested("j2", R.app, digest: 1, key: 0xa)
        attested.partitionAt = first
        let j1 = R.decision("j1", at: first)
        let holder = try PGConnection(conninfo: db.url)
        _ = try holder.pipeline(
            PGBegin(), VerdictsTable.BatchLocks(jobs: [j1, attested].map { ScopedJobId(app: $0.app, jobId: $0.jobId) }, keyIds: []),
            VerdictsTable.Attestations([attested]), VerdictsTable.Decisions([j1]))

        // Other content under the same jobIds, under another partition time, from another connection.
        var again = ScopedVerdictStoreTests.attested("j2", R.app, digest: 9, key: 0xb)
        again.partitionAt = later
        let second = [R.decision("j1", at: later, digest: 9), again]
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: db.url))
        let outcome = Mutex<Result<[CommitOutcome], PGError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let result = Result { () throws(PGError) in try store.commit(second).outcomes }
            outcome.withLock { $0 = result }
            done.signal()
        }.start()

        // It waits for the open transaction's locks...
        #expect(done.wait(timeout: .now() + 1) == .timedOut)
        try holder.execute("COMMIT")
        // ...and then finds the verdicts it committed, in their partition.
        #expect(done.wait(timeout: .now() + 30) == .success)
        let outcomes = try #require(outcome.withLock { $0 }).get()
        guard outcomes.count == 2, case .alreadyDecided(let v1) = outcomes[0], case .alreadyDecided(let v2) = outcomes[1] else {
            Issue.record("expected both already decided, got \(outcomes)")
            return
        }
        #expect(v1.jobDigest == [UInt8](repeating: 1, count: 32))
        #expect(v2.jobDigest == [UInt8](repeating: 1, count: 32))
        #expect(try db.count("SELECT count(*) FROM verdicts") == 2)
        #expect(try db.count("SELECT count(*) FROM verdicts_p20261201_000000") == 2)
        #expect(try db.count("SELECT count(*) FROM devices") == 1)
    }

    @Test func theCommitLocksItsJobIdsInTheLocksKeyOrderWhateverTheBatchOrder() throws {
        let db = try R.Schema()
        let day = Timestamp(seconds: 1_796_083_200)
        _ = try db.connection.execute(PartitionsTable.Create(table: "verdicts", lower: day, upper: day.adding(seconds: 86_400)))
        let name = "joblocks-\(db.name)"
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: db.url, applicationName: name))
        // Advisory locks are the database's, not the schema's: jobIds of this test only, in their locks' order.
        let named = (0..<4).map { "\(db.name)-k\($0)" }
        let ordered = try db.connection.execute(
            "SELECT j FROM unnest($1::text[]) AS j ORDER BY hashtextextended($2 || '/' || $3 || '/' || j, 0)",
            [.array(.text(named)), .text(R.app.teamId), .text(R.app.bundleId)])
        let jobs = (0..<named.count).compactMap { ordered.string($0, 0) }
        #expect(Set(jobs) == Set(named))
        let locks = { (c: PGConnection, jobs: [String]) throws(PGError) in
            try c.execute(VerdictsTable.BatchLocks(jobs: jobs.map { ScopedJobId(app: R.app, jobId: $0) }, keyIds: []))
        }
        // Another session holds the first lock the batch takes; the batch lists its jobId last.
        let holder = try PGConnection(conninfo: db.url)
        try holder.execute("BEGIN")
        try locks(holder, [jobs[0]])
        let outcomes = AttestStoreTests.commitInBackground(store, jobs.reversed().map { R.decision($0, at: day) })
        #expect(try AttestStoreTests.waitForLockWait(db.admin, name: name))
        // The batch waits for the lowest before it takes any other: the others are free.
        try db.admin.execute("BEGIN")
        try db.admin.execute("SET LOCAL lock_timeout = '500ms'")
        try locks(db.admin, Array(jobs.dropFirst()))
        try db.admin.execute("ROLLBACK")
        try holder.execute("ROLLBACK")
        #expect(outcomes() == Array(repeating: .stored, count: jobs.count))
    }

    /// The verdict inserts have no ON CONFLICT guard: a verdict of the batch's jobId that a writer taking
    /// no lock stores in the same partition between the gather and the settle fails the settle on the
    /// partition's key, and the batch runs again whole and finds it, on both write paths.
    @Test func aVerdictStoredWithoutTheLocksBetweenGatherAndSettleRunsTheBatchAgain() throws {
        let db = try R.Schema()
        let day = Timestamp(seconds: 1_796_083_200)
        _ = try db.connection.execute(PartitionsTable.Create(table: "verdicts", lower: day, upper: day.adding(seconds: 86_400)))
        var attested = ScopedVerdictStoreTests.attested("j2", R.app, digest: 1, key: 0xa)
        attested.partitionAt = day
        for decision in [R.decision("j1", at: day), attested] {
            let job = ScopedJobId(app: decision.app, jobId: decision.jobId)
            let store = AttestStore(connection: PGReconnectingConnection(conninfo: db.url))
            let lockless = try PGConnection(conninfo: db.url)
            var runs = 0
            let found = try store.batch { tx throws(PGError) in
                runs += 1
                let stored = try tx.gather(GatherRequest(jobs: [job], keyIds: [])).verdicts[job]
                if runs == 1 {
                    var other = decision
                    other.jobDigest = [UInt8](repeating: 9, count: 32)
                    other.change = .none
                    _ = try lockless.execute(VerdictsTable.Decisions([other]))
                }
                _ = try tx.settle(stored == nil ? [decision] : [])
                return stored
            }
            #expect(runs == 2)
            #expect(found?.jobDigest == [UInt8](repeating: 9, count: 32))
            #expect(try db.count("SELECT count(*) FROM verdicts WHERE job_id = '\(decision.jobId)'") == 1)
        }
        #expect(try db.count("SELECT count(*) FROM devices") == 0)
    }
}
