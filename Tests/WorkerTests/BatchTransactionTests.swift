import AttestCore
import AttestJobs
import Dispatch
import Foundation
import PostgresClient
import Synchronization
import Testing
@testable import Store

/// A batch decides from what its gather read, against the ops/stack PostgreSQL: the gather locks the batch's
/// keys, so another batch of the same key waits for the first to settle and reads what it stored, instead of
/// losing a counter race at its commit and deciding again.
@Suite struct BatchTransactionTests {
    typealias S = AttestStoreTests

    @Test func aSecondBatchOfAKeyWaitsForTheFirstToSettleAndReadsItsCounter() throws {
        let db = try S.Database()
        try db.addDevice(S.keyA, counter: 3)
        let store = db.store
        let waiter = "batch-lock-\(db.schema)"
        let other = try S.probedStore(db, name: waiter)
        let gathered = DispatchSemaphore(value: 0)
        let settle = DispatchSemaphore(value: 0)
        let firstDone = DispatchSemaphore(value: 0)
        let secondDone = DispatchSemaphore(value: 0)
        let first = Mutex<Result<[Bool], PGError>?>(nil)
        let second = Mutex<Result<UInt32?, PGError>?>(nil)

        Thread {
            let result = Result { () throws(PGError) in
                try store.batch { tx throws(PGError) in
                    let read = try tx.gather(GatherRequest(jobs: [], keyIds: [S.keyA]))
                    #expect(read.devices[S.keyA]?.counter == 3)
                    gathered.signal()
                    _ = settle.wait(timeout: .now() + 30)
                    return try tx.settle([S.decision("a4", .advanced(keyId: S.keyA, counter: 4))]).stored
                }
            }
            first.withLock { $0 = result }
            firstDone.signal()
        }.start()
        #expect(gathered.wait(timeout: .now() + 30) == .success, "the first batch did not gather")

        Thread {
            let result = Result { () throws(PGError) in
                try other.batch { tx throws(PGError) in
                    let read = try tx.gather(GatherRequest(jobs: [], keyIds: [S.keyA]))
                    _ = try tx.settle([])
                    return read.devices[S.keyA]?.counter
                }
            }
            second.withLock { $0 = result }
            secondDone.signal()
        }.start()

        // The second gather waits on the first one's key lock (seen in pg_stat_activity), then the first settles.
        #expect(try S.waitForLockWait(db.connection, name: waiter), "the second gather never waited on a lock")
        #expect(second.withLock { $0 } == nil)
        settle.signal()
        #expect(firstDone.wait(timeout: .now() + 30) == .success, "the first batch did not settle")
        #expect(try #require(first.withLock { $0 }).get() == [true])
        #expect(secondDone.wait(timeout: .now() + 30) == .success, "the second batch never got the lock")
        #expect(try #require(second.withLock { $0 }).get() == 4)
    }

    @Test func aBatchThatGathersAndDoesNotSettleIsRolledBack() throws {
        let db = try S.Database()
        try db.addDevice(S.keyA, counter: 3)
        #expect(throws: PGError.self) {
            try db.store.batch { tx throws(PGError) in _ = try tx.gather(GatherRequest(jobs: [], keyIds: [S.keyA])) }
        }
        // Its locks went with it: another batch gathers the key at once.
        let counter = try db.store.batch { tx throws(PGError) in
            let read = try tx.gather(GatherRequest(jobs: [], keyIds: [S.keyA]))
            _ = try tx.settle([])
            return read.devices[S.keyA]?.counter
        }
        #expect(counter == 3)
    }
}
