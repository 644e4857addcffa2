import AttestCore
import AttestJobs
import Foundation
import PostgresClient
import Testing
@testable import Store
@testable import Worker

/// Verdicts keyed by (team_id, bundle_id, job_id) against the ops/stack PostgreSQL: two apps' equal jobIds
/// are two rows, a decided one reports its digest, and migration 0006 moves the rows stored before it.
@Suite struct ScopedVerdictStoreTests {
    typealias S = AttestStoreTests
    static let appA = AppIdentity(teamId: "TEAM123456", bundleId: "com.example.a")
    static let appB = AppIdentity(teamId: "TEAM123456", bundleId: "com.example.b")

    static func decision(_ jobId: String, _ app: AppIdentity, digest: UInt8, change: Decision.DeviceChange = .none) -> Decision {
        var d = S.decision(jobId, change, ok: false)
        d.app = app
        d.verdictJSON = #"{"jobId":"\#(jobId)","app":"\#(app.appId)"}"#
        d.jobDigest = [UInt8](repeating: digest, count: 32)
        return d
    }

    static func attested(_ jobId: String, _ app: AppIdentity, digest: UInt8, key: UInt8) -> Decision {
        let device = Decision.AttestedDevice(
            keyId: [UInt8](repeating: key, count: 32), teamId: app.teamId, bundleId: app.bundleId,
            publicKey: [0x04] + [UInt8](repeating: key, count: 64), environment: "production", receipt: [1, 2, 3], deviceId: nil,
            metadata: [:])
        var d = decision(jobId, app, digest: digest, change: .attested(device))
        d.ok = true
        d.code = nil
        d.reason = nil
        return d
    }

    @Test func twoAppsEqualJobIdsAreTwoVerdictsAndADecidedOneReportsItsDigest() throws {
        let db = try S.Database()
        // Both statements: the set-based one (rejections) and the accepted attestation's own.
        let first = try db.store.commit([
            Self.decision("order-42", Self.appA, digest: 1), Self.decision("order-42", Self.appB, digest: 2),
            Self.attested("order-43", Self.appA, digest: 3, key: 0xa), Self.attested("order-43", Self.appB, digest: 4, key: 0xb),
        ])
        #expect(first.outcomes == [.stored, .stored, .stored, .stored])
        let again = try db.store.commit([
            Self.decision("order-42", Self.appB, digest: 9), Self.attested("order-43", Self.appA, digest: 9, key: 0xc),
        ])
        #expect(again.outcomes == [
            .alreadyDecided(StoredVerdict(json: #"{"jobId":"order-42","app":"\#(Self.appB.appId)"}"#, jobDigest: [UInt8](repeating: 2, count: 32))),
            .alreadyDecided(StoredVerdict(json: #"{"jobId":"order-43","app":"\#(Self.appA.appId)"}"#, jobDigest: [UInt8](repeating: 3, count: 32))),
        ])
        let keys = [
            ScopedJobId(app: Self.appA, jobId: "order-42"), ScopedJobId(app: Self.appB, jobId: "order-42"),
            ScopedJobId(app: .none, jobId: "order-42"), ScopedJobId(app: Self.appB, jobId: "order-43"),
        ]
        let verdicts = try db.store.read(GatherRequest(jobs: keys, keyIds: [])).verdicts
        #expect(verdicts.count == 3)
        #expect(verdicts[keys[0]]?.jobDigest == [UInt8](repeating: 1, count: 32))
        #expect(verdicts[keys[1]]?.json.contains(Self.appB.appId) == true)
        #expect(verdicts[keys[2]] == nil)
        #expect(verdicts[keys[3]]?.jobDigest == [UInt8](repeating: 4, count: 32))
        // The re-attestation under a decided jobId stored no device change.
        #expect(try db.connection.execute("SELECT count(*) FROM devices").int(0, 0) == 2)
    }

    @Test func migration0006MovesEveryVerdictIntoTheScopeTheWorkerComputes() throws {
        let url = try #require(ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"], "run ops/stack up")
        let schema = "scoped_\(UInt32.random(in: 0...UInt32.max))"
        let admin = try PGConnection(conninfo: url)
        try admin.execute("CREATE SCHEMA \(schema)")
        defer { _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
        let scoped = url + (url.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(schema)"
        let connection = try PGConnection(conninfo: scoped)
        let all = try Migrator.bundled
        _ = try Migrator.migrate(connection, migrations: all.filter { $0.version < 6 })
        let legacy: [(job: String, team: String?, bundle: String?)] = [
            ("valid", "TEAM123456", "com.example.a"), ("unread", nil, nil), ("split", "TEAM123456.com", "example.a"),
            ("lower", "team123456", "com.example.a"), ("dots", "TEAM123456", "com..example"), ("trailing", "TEAM123456", "com.a."),
        ]
        for row in legacy {
            try connection.execute(
                "INSERT INTO verdicts (job_id, team_id, bundle_id, ok, verdict_json, decided_at) VALUES ($1, $2, $3, false, $1, now())",
                [.text(row.job), row.team.map(PGValue.text) ?? .null, row.bundle.map(PGValue.text) ?? .null])
        }
        #expect(try Migrator.migrate(connection, migrations: all) == all.filter { $0.version >= 6 }.map(\.name))
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: scoped))
        let keys = legacy.map { row in
            ScopedJobId(app: AppIdentity(validating: row.team ?? "", row.bundle ?? "") ?? .none, jobId: row.job)
        }
        let verdicts = try store.read(GatherRequest(jobs: keys, keyIds: [])).verdicts
        #expect(Set(verdicts.keys) == Set(keys))
        #expect(keys.filter { $0.app != .none }.map(\.jobId) == ["valid"])
        #expect(try connection.execute("SELECT count(*) FROM verdicts").int(0, 0) == Int64(legacy.count))
    }
}
