import AttestCore
import AttestJobs
import Foundation
import PostgresClient
import Synchronization
import Testing
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
            PGBegin(), VerdictsTable.JobLocks(jobs: [j1, attested].map { ScopedJobId(app: $0.app, jobId: $0.jobId) }),
            VerdictsTable.Attestation(attested), VerdictsTable.Decisions([j1]))

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

    @Test func theCommitLocksItsJobIdsInKeyOrderSoCrossedBatchesDoNotDeadlock() throws {
        let db = try R.Schema()
        let day = Timestamp(seconds: 1_796_083_200)
        _ = try db.connection.execute(PartitionsTable.Create(table: "verdicts", lower: day, upper: day.adding(seconds: 86_400)))
        // Two workers writing the same jobIds in opposite orders, round after round: each jobId is stored once,
        // and no commit is retried (a deadlock would be, after PostgreSQL's deadlock_timeout).
        let retries = Mutex<[PGError]>([])
        let stores = (0..<2).map { _ in
            AttestStore(connection: PGReconnectingConnection(
                conninfo: db.url, onRetry: { error, _, _ in retries.withLock { $0.append(error) } }))
        }
        let jobs = (0..<40).map { "k\($0)" }
        let stored = Mutex(0)
        let failures = Mutex<[PGError]>([])
        let group = DispatchGroup()
        for (store, order) in zip(stores, [jobs, jobs.reversed()]) {
            group.enter()
            Thread {
                defer { group.leave() }
                for round in 0..<10 {
                    do throws(PGError) {
                        let outcomes = try store.commit(order.map { R.decision("\($0)-\(round)", at: day) }).outcomes
                        stored.withLock { $0 += outcomes.filter { $0 == .stored }.count }
                    } catch {
                        failures.withLock { $0.append(error) }
                    }
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 120) == .success)
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(retries.withLock { $0 }.isEmpty)
        #expect(stored.withLock { $0 } == jobs.count * 10)
        #expect(try db.count("SELECT count(*) FROM verdicts") == Int64(jobs.count * 10))
    }
}
