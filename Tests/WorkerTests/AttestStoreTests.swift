import AttestCore
import AttestJobs
import Foundation
import PostgresClient
import Testing
@testable import Store
@testable import Worker

/// The batch commit's set-based statement against the ops/stack PostgreSQL, in a schema of its own: the
/// outcomes must be those of applying the decisions one by one.
@Suite struct AttestStoreTests {
    /// A migrated schema of its own and a store on it.
    final class Database {
        let admin: PGConnection
        let schema = "store_\(UInt32.random(in: 0...UInt32.max))"
        let connection: PGConnection
        let store: AttestStore

        init() throws {
            let url = try #require(
                ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"], "run ops/stack up and eval \"$(ops/stack env)\"")
            admin = try PGConnection(conninfo: url)
            try admin.execute("CREATE SCHEMA \(schema)")
            let scoped = url + (url.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(schema)"
            connection = try PGConnection(conninfo: scoped)
            _ = try Migrator.migrate(connection, migrations: Migrator.bundled)
            store = AttestStore(connection: PGReconnectingConnection(conninfo: scoped))
        }

        deinit { _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE") }

        func addDevice(_ key: [UInt8], counter: Int64) throws {
            try connection.execute(
                """
                INSERT INTO devices (key_id, team_id, bundle_id, public_key, counter, environment, device_id, attested_at,
                    last_seen_at)
                VALUES ($1, 'TEAM', 'app', $2, $3, 'production', 'd', now(), now())
                """, [.bytes(key), .bytes([0x04] + [UInt8](repeating: 1, count: 64)), .int(counter)])
        }

        func counter(_ key: [UInt8]) throws -> Int64? {
            try connection.execute("SELECT counter FROM devices WHERE key_id = $1", [.bytes(key)]).int(0, 0)
        }

        func storedJobs() throws -> Set<String> {
            let rows = try connection.execute("SELECT job_id FROM verdicts")
            return Set((0..<rows.count).compactMap { rows.string($0, 0) })
        }
    }

    static let now = Timestamp(microseconds: 1_796_000_000_000_000)

    static func decision(_ jobId: String, _ change: Decision.DeviceChange, ok: Bool = true) -> Decision {
        Decision(
            jobId: jobId, app: AppIdentity(teamId: "TEAM", bundleId: "app"), kind: "assertion", keyId: "k", ok: ok,
            code: ok ? nil : "x",
            reason: ok ? nil : "y", verdictJSON: #"{"jobId":"\#(jobId)"}"#, receivedAt: now, decidedAt: now,
            source: .init(topic: "t", partition: 0, offset: 1), change: change, intelligence: nil)
    }

    static let keyA = [UInt8](repeating: 0xa, count: 32)
    static let keyB = [UInt8](repeating: 0xb, count: 32)

    @Test func aKeysAssertionsAdvanceItsCounterToTheLastWhenTheStoredOneIsBelowTheFirst() throws {
        let db = try Database()
        try db.addDevice(Self.keyA, counter: 1)
        try db.addDevice(Self.keyB, counter: 5)
        let decisions = [
            Self.decision("a2", .advanced(keyId: Self.keyA, counter: 2)),
            Self.decision("b6", .advanced(keyId: Self.keyB, counter: 6)),
            Self.decision("rejected", .none, ok: false),
            Self.decision("a3", .advanced(keyId: Self.keyA, counter: 3)),
            Self.decision("a7", .advanced(keyId: Self.keyA, counter: 7)),
        ]
        let (outcomes, _) = try db.store.commit(decisions)
        #expect(outcomes == Array(repeating: .stored, count: 5))
        #expect(try db.counter(Self.keyA) == 7)
        #expect(try db.counter(Self.keyB) == 6)
        let counts = try db.connection.execute("SELECT assertion_count FROM devices WHERE key_id = $1", [.bytes(Self.keyA)])
        #expect(counts.int(0, 0) == 3)
        let stored = try db.connection.execute(
            "SELECT received_at = $1::timestamptz, source_offset, verdict_json FROM verdicts WHERE job_id = 'a3'",
            [.text(Self.now.rfc3339)])
        #expect(stored.bool(0, 0) == true)
        #expect(stored.int(0, 1) == 1)
        #expect(stored.string(0, 2) == #"{"jobId":"a3"}"#)
    }

    @Test func aKeyWhoseStoredCounterReachedItsFirstAssertionStoresNoneOfThemAndOthersAreUnaffected() throws {
        let db = try Database()
        try db.addDevice(Self.keyA, counter: 3)
        try db.addDevice(Self.keyB, counter: 0)
        let decisions = [
            Self.decision("a3", .advanced(keyId: Self.keyA, counter: 3)),
            Self.decision("a4", .advanced(keyId: Self.keyA, counter: 4)),
            Self.decision("b1", .advanced(keyId: Self.keyB, counter: 1)),
        ]
        let (outcomes, _) = try db.store.commit(decisions)
        #expect(outcomes == [.counterConflict, .counterConflict, .stored])
        #expect(try db.counter(Self.keyA) == 3)
        #expect(try db.counter(Self.keyB) == 1)
        #expect(try db.storedJobs() == ["b1"])
    }

    @Test func jobsDecidedBeforeReturnTheirStoredVerdictAndDoNotMoveTheCounter() throws {
        let db = try Database()
        try db.addDevice(Self.keyA, counter: 0)
        _ = try db.store.commit([Self.decision("a1", .advanced(keyId: Self.keyA, counter: 1)), Self.decision("r", .none, ok: false)])
        var again = Self.decision("a1", .advanced(keyId: Self.keyA, counter: 1))
        again.verdictJSON = #"{"other":true}"#
        let (outcomes, _) = try db.store.commit([
            again, Self.decision("r", .none, ok: false), Self.decision("a2", .advanced(keyId: Self.keyA, counter: 2)),
        ])
        #expect(outcomes == [
            .alreadyDecided(StoredVerdict(json: #"{"jobId":"a1"}"#, jobDigest: nil)),
            .alreadyDecided(StoredVerdict(json: #"{"jobId":"r"}"#, jobDigest: nil)), .stored,
        ])
        #expect(try db.counter(Self.keyA) == 2)
        let counts = try db.connection.execute("SELECT assertion_count FROM devices WHERE key_id = $1", [.bytes(Self.keyA)])
        #expect(counts.int(0, 0) == 2)
    }

    @Test func thePurgeDeletesOnlyChallengesExpiredLongerAgoThanTheRetention() throws {
        let db = try Database()
        try db.connection.execute("INSERT INTO apps (team_id, bundle_id) VALUES ('TEAM', 'app')")
        for (byte, expiredHoursAgo) in [(UInt8(1), 49), (2, 48), (3, 47), (4, 1), (5, -1)] {
            try db.connection.execute(
                """
                INSERT INTO challenges (challenge, team_id, bundle_id, issued_at, expires_at)
                VALUES ($1, 'TEAM', 'app', now() - $2::bigint * interval '1 hour' - interval '5 minutes',
                    now() - $2::bigint * interval '1 hour')
                """, [.bytes([UInt8](repeating: byte, count: 32)), .int(Int64(expiredHoursAgo))])
        }
        // 46.5 hours: the three oldest go, in chunks of two; the recent and the live one stay.
        #expect(try db.store.purgeChallenges(retainSeconds: 167_400, chunk: 2) == 3)
        let left = try db.connection.execute("SELECT get_byte(challenge, 0) FROM challenges ORDER BY 1")
        #expect((0..<left.count).map { left.int($0, 0) } == [4, 5])
        #expect(try db.store.purgeChallenges(retainSeconds: 167_400, chunk: 2) == 0)
    }

    static func attested(_ jobId: String, _ key: [UInt8], deviceId: String? = nil, metadata: [String: String] = [:]) -> Decision {
        var d = decision(jobId, .attested(Decision.AttestedDevice(
            keyId: key, teamId: "TEAM", bundleId: "app", publicKey: [0x04] + [UInt8](repeating: UInt8(jobId.count), count: 64),
            environment: "production", receipt: Array(jobId.utf8), deviceId: deviceId, metadata: metadata)))
        d.kind = "attestation"
        return d
    }

    /// key → (device_id, attestation_count, fingerprint, device_model, receipt, first byte of the public key's point).
    static func devices(_ db: Database) throws -> [[UInt8]: (String?, Int64?, String?, String?, String?, Int64?)] {
        let rows = try db.connection.execute(
            "SELECT key_id, device_id, attestation_count, fingerprint, device_model, convert_from(receipt, 'UTF8'), get_byte(public_key, 1) FROM devices")
        return Dictionary(uniqueKeysWithValues: (0..<rows.count).map { i in
            (rows.bytes(i, 0) ?? [], (rows.string(i, 1), rows.int(i, 2), rows.string(i, 3), rows.string(i, 4), rows.string(i, 5), rows.int(i, 6)))
        })
    }

    @Test func attestationsInOneBatchInsertTheirDevicesAndALaterOneOfTheSameKeyRefreshesItInBatchOrder() throws {
        let db = try Database()
        let (outcomes, _) = try db.store.commit([
            Self.attested("a-1", Self.keyA, metadata: ["deviceFingerprint": "f1", "deviceModel": "m1"]),
            Self.attested("b-1", Self.keyB, deviceId: "given-b"),
            Self.decision("rejected", .none, ok: false),
            Self.attested("a-22", Self.keyA, metadata: ["deviceModel": "m2"]),
        ])
        #expect(outcomes == [.stored, .stored, .stored, .stored])
        let devices = try Self.devices(db)
        let a = try #require(devices[Self.keyA])
        let b = try #require(devices[Self.keyB])
        // The key's second attestation refreshed the row the first inserted: its generated device id kept,
        // the fingerprint it did not give kept, the rest (model, receipt, public key) the second's.
        #expect(a.0?.count == 36)
        #expect(a.1 == 2)
        #expect(a.2 == "f1")
        #expect(a.3 == "m2")
        #expect(a.4 == "a-22")
        #expect(a.5 == 4)
        #expect(b.0 == "given-b")
        #expect(b.1 == 1)
        #expect(try db.storedJobs() == ["a-1", "b-1", "rejected", "a-22"])
    }

    @Test func aKeysAssertionsFindTheDeviceItsAttestationInTheSameBatchInserts() throws {
        let db = try Database()
        let (outcomes, _) = try db.store.commit([
            Self.decision("a-s1", .advanced(keyId: Self.keyA, counter: 1)), Self.attested("a-1", Self.keyA),
            Self.decision("a-s2", .advanced(keyId: Self.keyA, counter: 2)),
        ])
        #expect(outcomes == [.stored, .stored, .stored])
        #expect(try db.counter(Self.keyA) == 2)
        #expect(try Self.devices(db)[Self.keyA]?.1 == 1)
    }

    /// The write statements answer each decision by its jobId: a jobId given twice in one call is settled
    /// once, for its first decision, and the second changes nothing.
    @Test func aJobIdGivenTwiceInOneCommitIsSettledOnceForItsFirstDecision() throws {
        let db = try Database()
        try db.addDevice(Self.keyB, counter: 0)
        let (outcomes, _) = try db.store.commit([
            Self.attested("twice", Self.keyA), Self.attested("twice", Self.keyB),
            Self.decision("again", .advanced(keyId: Self.keyB, counter: 1)), Self.decision("again", .advanced(keyId: Self.keyB, counter: 2)),
        ])
        #expect(outcomes == [.stored, .counterConflict, .stored, .counterConflict])
        #expect(try Self.devices(db)[Self.keyB]?.1 == 1)
        #expect(try db.counter(Self.keyB) == 1)
        #expect(try db.storedJobs() == ["twice", "again"])
    }

    @Test func aReattestationKeepsTheStoredDeviceIdUnlessItGivesOneAndARedeliveredOneChangesNothing() throws {
        let db = try Database()
        try db.addDevice(Self.keyA, counter: 5)
        try db.addDevice(Self.keyB, counter: 0)
        _ = try db.store.commit([Self.attested("a-1", Self.keyA), Self.attested("b-1", Self.keyB, deviceId: "new-b")])
        var devices = try Self.devices(db)
        #expect(devices[Self.keyA]?.0 == "d")
        #expect(devices[Self.keyA]?.1 == 2)
        #expect(devices[Self.keyB]?.0 == "new-b")
        // The counter never moves back.
        #expect(try db.counter(Self.keyA) == 5)
        let (again, _) = try db.store.commit([Self.attested("a-1", Self.keyA, deviceId: "other")])
        guard case .alreadyDecided = again.first else {
            Issue.record("expected the redelivery to be already decided, got \(again)")
            return
        }
        devices = try Self.devices(db)
        #expect(devices[Self.keyA]?.0 == "d")
        #expect(devices[Self.keyA]?.1 == 2)
    }

    @Test func anAssertionOfAKeyWithoutADeviceRowIsAConflictNotAVerdict() throws {
        let db = try Database()
        let (outcomes, _) = try db.store.commit([Self.decision("a1", .advanced(keyId: Self.keyA, counter: 1))])
        #expect(outcomes == [.counterConflict])
        #expect(try db.storedJobs().isEmpty)
    }
}
