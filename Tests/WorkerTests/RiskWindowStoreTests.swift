import AttestCore
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import Foundation
import PostgresClient
import Testing
@testable import Store
@testable import Worker

/// The failure window as `device_risk` applies it (the SQL twin of `DeviceHistory.record`), against the
/// ops/stack PostgreSQL: failures add up within the window, also from concurrent workers, the first one
/// after it opens a new one, and migration 0007 moves the old all-time counters into a window.
@Suite struct RiskWindowStoreTests {
    typealias Database = AttestStoreTests.Database
    static let device = AppDevice(teamId: "TEAM", bundleId: "app", identity: DeviceIdentity(stored: "key:aa"))
    static let start = Timestamp(microseconds: 1_796_000_000_000_000)
    static let window = DeviceHistory.failureWindowSeconds

    /// A rejected assertion of `device` received at `at`, counted as `reason` says.
    static func rejection(_ jobId: String, _ reason: FailureReason, at: Timestamp) -> Decision {
        var verdict = Verdict(job: nil, verifiedAt: at)
        verdict.kind = .assertion
        verdict.failure = VerificationFailure(.assertionInvalid, reason, "test")
        var decision = AttestStoreTests.decision(jobId, .none, ok: false)
        decision.receivedAt = at
        decision.intelligence = IntelligenceChange(
            device: device, month: at.utcMonth, event: DeviceEvent(verdict, newKey: false), deviceId: "d",
            assessment: RiskModel.assess(RiskSignals(), policy: RiskPolicy()), writesRisk: true, countsAsActive: false, keyId: nil)
        return decision
    }

    static func history(_ store: AttestStore) throws -> DeviceHistory? {
        var query = IntelligenceQuery()
        query.devices = [device]
        return try store.readIntelligence(query).histories[device]
    }

    @Test func theStoredWindowIsTheInMemoryOne() throws {
        let db = try Database()
        let steps: [(FailureReason, Int64)] = [
            (.counterNotIncreasing, 0), (.signatureInvalid, 3600), (.malformedCBOR, 7200), (.signatureInvalid, -600),
            (.counterNotIncreasing, Self.window - 1), (.signatureInvalid, Self.window), (.unknownKey, 3 * Self.window),
            (.counterNotIncreasing, 3 * Self.window + 1),
        ]
        var twin = DeviceHistory()
        for (n, (reason, offset)) in steps.enumerated() {
            let at = Self.start.adding(seconds: offset)
            let decision = Self.rejection("w-\(n)", reason, at: at)
            _ = try db.store.commit([decision])
            twin.record(decision.intelligence!.event, at: at)
            let stored = try #require(try Self.history(db.store))
            #expect(stored.failureWindowStart == twin.failureWindowStart, "step \(n)")
            #expect(stored.counterReplays == twin.counterReplays && stored.failedAssertions == twin.failedAssertions, "step \(n)")
        }
        // The last window opened at 3 windows + 1 s and holds that one replay only.
        let stored = try #require(try Self.history(db.store))
        #expect(stored.failureWindowStart == Self.start.adding(seconds: 3 * Self.window + 1))
        #expect(stored.counterReplays == 1 && stored.failedAssertions == 0)
    }

    @Test func concurrentWorkersAddUpWithinAWindow() throws {
        let db = try Database()
        _ = try db.store.commit([Self.rejection("c-0", .counterNotIncreasing, at: Self.start)])
        let url = try #require(ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"])
        let scoped = url + (url.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(db.schema)"
        let stores = (0..<2).map { _ in AttestStore(connection: PGReconnectingConnection(conninfo: scoped)) }
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for n in 0..<20 {
                let at = Self.start.adding(seconds: Int64(n))
                _ = try? stores[worker].commit([Self.rejection("c-\(worker)-\(n)", .counterNotIncreasing, at: at)])
            }
        }
        let stored = try #require(try Self.history(db.store))
        #expect(stored.counterReplays == 41 && stored.failureWindowStart == Self.start)
    }

    @Test func migration0007OpensTheOldCountersWindowAtTheRowsLastChange() throws {
        let db = try Database()
        try db.connection.execute("DROP SCHEMA \(db.schema) CASCADE")
        try db.connection.execute("CREATE SCHEMA \(db.schema)")
        let all = try Migrator.bundled
        let before = try #require(all.firstIndex { $0.version == 7 })
        _ = try Migrator.migrate(db.connection, migrations: Array(all[..<before]))
        for (identity, replays) in [("key:old", 3), ("key:clean", 0)] {
            try db.connection.execute(
                """
                INSERT INTO device_risk (team_id, bundle_id, identity, device_id, counter_replays, failed_assertions, score,
                    category, factors, updated_at)
                VALUES ('TEAM', 'app', $1, 'd', $2, 1, 45, 'suspicious', '[]', $3::timestamptz)
                """, [.text(identity), .int(Int64(replays)), .text(Self.start.rfc3339)])
        }
        try db.connection.execute("UPDATE device_risk SET failed_assertions = 0 WHERE identity = 'key:clean'")
        _ = try Migrator.migrate(db.connection, migrations: all)
        let rows = try db.connection.execute(
            "SELECT identity, failure_window_start = $1::timestamptz FROM device_risk ORDER BY identity", [.text(Self.start.rfc3339)])
        #expect(rows.string(0, 0) == "key:clean" && rows.bool(0, 1) == nil)
        #expect(rows.string(1, 0) == "key:old" && rows.bool(1, 1) == true)
        // Read back, the old counters count until a window after the row's last change, then no more.
        var query = IntelligenceQuery()
        let old = AppDevice(teamId: "TEAM", bundleId: "app", identity: DeviceIdentity(stored: "key:old"))
        query.devices = [old]
        let history = try #require(try db.store.readIntelligence(query).histories[old])
        #expect(history.signals(at: Self.start.adding(seconds: Self.window - 1), extensions: nil).counterReplays == 3)
        #expect(history.signals(at: Self.start.adding(seconds: Self.window), extensions: nil).counterReplays == 0)
    }
}
