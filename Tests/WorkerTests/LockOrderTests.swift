import AttestCore
import Dispatch
import Foundation
import PostgresClient
import Synchronization
import Testing
@testable import Store
@testable import Worker

/// Batches lock rows in key order, whatever order their jobs came in, so two workers' batches cannot
/// deadlock on them. Each test holds the lowest row from another session, commits a batch that lists the
/// higher row first, and shows the higher row is still free while the batch waits: it was not locked first.
extension AttestStoreTests {
    /// A store on `db`'s schema under its own application name, so its lock waits can be told apart.
    static func probedStore(_ db: Database, name: String) throws -> AttestStore {
        let url = try #require(ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"])
        let scoped = url + (url.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(db.schema)"
        return AttestStore(connection: PGReconnectingConnection(conninfo: scoped, applicationName: name))
    }

    /// Commits `decisions` on another thread; returns a wait for its outcomes.
    static func commitInBackground(_ store: AttestStore, _ decisions: [Decision]) -> () -> [CommitOutcome]? {
        let result = Mutex<[CommitOutcome]?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let outcomes = try? store.commit(decisions).outcomes
            result.withLock { $0 = outcomes }
            done.signal()
        }
        return {
            _ = done.wait(timeout: .now() + 30)
            return result.withLock { $0 }
        }
    }

    /// Waits until a session named `name` waits for a lock, up to 10 s. Polled: a lock wait shows only in
    /// pg_stat_activity, and no notification marks it.
    static func waitForLockWait(_ admin: PGConnection, name: String) throws -> Bool {
        for _ in 0..<200 {
            let rows = try admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [.text(name)])
            if rows.int(0, 0) ?? 0 > 0 { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    @Test func devicesAreLockedInKeyOrderWhateverTheBatchOrder() throws {
        let db = try Database()
        let keys = (1...8).map { [UInt8](repeating: UInt8($0), count: 32) }
        // Stored (hence scanned) and batched highest first, the reverse of key order.
        for key in keys.reversed() { try db.addDevice(key, counter: 1) }
        let name = "lockorder-\(db.schema)"
        let store = try Self.probedStore(db, name: name)
        let holder = try PGConnection(conninfo: try #require(ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"]))
        try holder.execute("BEGIN")
        try holder.execute("SELECT 1 FROM \(db.schema).devices WHERE key_id = $1 FOR UPDATE", [.bytes(keys[0])])
        let outcomes = Self.commitInBackground(
            store, keys.reversed().enumerated().map { n, key in Self.decision("k\(n)", .advanced(keyId: key, counter: 2)) })
        #expect(try Self.waitForLockWait(db.admin, name: name))
        // Every other key comes before the lowest in the batch but after it in key order: none is locked yet.
        try db.admin.execute("BEGIN")
        try db.admin.execute(
            "SELECT 1 FROM \(db.schema).devices WHERE key_id = ANY($1::bytea[]) FOR UPDATE NOWAIT", [.array(.bytea(Array(keys.dropFirst())))])
        try db.admin.execute("ROLLBACK")
        try holder.execute("ROLLBACK")
        #expect(outcomes() == Array(repeating: .stored, count: keys.count))
        for key in keys { #expect(try db.counter(key) == 2) }
    }

    @Test func verdictsAreInsertedInJobIdOrderWhateverTheBatchOrder() throws {
        let db = try Database()
        let name = "lockorder-v-\(db.schema)"
        let store = try Self.probedStore(db, name: name)
        let holder = try PGConnection(conninfo: try #require(ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"]))
        // The decisions' scope (AttestStoreTests.decision's app): the rows the batch's inserts wait for, each
        // under its jobId's lock as a commit takes it (VerdictsTable.BatchLocks, migration 0013).
        let insert = """
            INSERT INTO \(db.schema).verdicts (team_id, bundle_id, job_id, ok, verdict_json, decided_at)
            VALUES ('TEAM', 'app', $1, false, '{}', now()) ON CONFLICT DO NOTHING
            """
        let lock = { (c: PGConnection, job: String) throws(PGError) in
            try c.execute(VerdictsTable.BatchLocks(jobs: [ScopedJobId(app: Self.decision(job, .none, ok: false).app, jobId: job)], keyIds: []))
        }
        try holder.execute("BEGIN")
        try lock(holder, "j-a")
        try holder.execute(insert, [.text("j-a")])
        let outcomes = Self.commitInBackground(store, [Self.decision("j-b", .none, ok: false), Self.decision("j-a", .none, ok: false)])
        #expect(try Self.waitForLockWait(db.admin, name: name))
        // Had the batch locked j-b first, this would wait for it (and time out).
        try db.admin.execute("BEGIN")
        try db.admin.execute("SET LOCAL lock_timeout = '500ms'")
        try lock(db.admin, "j-b")
        try db.admin.execute(insert, [.text("j-b")])
        try db.admin.execute("ROLLBACK")
        try holder.execute("ROLLBACK")
        #expect(outcomes() == [.stored, .stored])
        #expect(try db.storedJobs() == ["j-a", "j-b"])
    }
}
