import AttestCore
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import PostgresClient
import Testing
@testable import Store
@testable import Worker

/// The store's statements against the migrated schema, field by field: a statement whose row reads a
/// column under another name, or swaps two columns of one type, fails here.
@Suite("Store statements decode by name")
struct StoreStatementTests {
    typealias Database = AttestStoreTests.Database

    @Test("apps come back as they were registered, every field in its own column")
    func appsRoundTrip() throws {
        let db = try Database()
        let apps = [
            AppPolicy(teamId: "TEAM", bundleId: "one"),
            AppPolicy(
                teamId: "TEAM", bundleId: "two", environments: .any, challenges: .worker, madLimit: 500, graceDays: 3,
                tokenLifetimeSeconds: 900, risk: RiskPolicy(weights: [.counterReplay: 40], minimumBundleVersion: "2.1"),
                limitedUseAssertions: true, limitedUseLifetimeSeconds: 60),
        ]
        for app in apps { try db.store.upsert(app) }
        let stored = try db.store.apps()
        #expect(stored.count == 2)
        for app in apps { #expect(stored[app.app] == app) }
    }

    @Test("a device is read back field by field; an absent key is simply absent")
    func prefetchedDevice() throws {
        let db = try Database()
        try db.addDevice(AttestStoreTests.keyA, counter: 7)
        let read = try db.store.read(
            GatherRequest(
                jobs: [ScopedJobId(app: AppIdentity(teamId: "TEAM", bundleId: "app"), jobId: "none")],
                keyIds: [AttestStoreTests.keyA, AttestStoreTests.keyB]))
        let (verdicts, devices) = (read.verdicts, read.devices)
        #expect(verdicts.isEmpty)
        #expect(devices.count == 1)
        let device = try #require(devices[AttestStoreTests.keyA])
        #expect(device.keyId == AttestStoreTests.keyA)
        #expect(device.teamId == "TEAM" && device.bundleId == "app")
        #expect(device.publicKey == [0x04] + [UInt8](repeating: 1, count: 64))
        #expect(device.counter == 7)
        #expect(device.environment == "production" && device.deviceId == "d" && device.fingerprint == nil)
    }

    @Test("the billing view's months are read by app and month")
    func billingMonths() throws {
        let db = try Database()
        try db.connection.execute(
            """
            INSERT INTO mad_devices (team_id, bundle_id, month, identity, job_id, counted_at)
            SELECT 'TEAM', b, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 'id-' || n, 'job-' || b || n, now()
            FROM (VALUES ('one', 3), ('two', 1)) AS x(b, k) CROSS JOIN LATERAL generate_series(1, k) AS n
            """)
        let rows = try db.store.monthlyActiveDevices(teamId: "TEAM", bundleId: nil, month: nil, recentMonths: 1)
        #expect(rows.map(\.bundleId) == ["one", "two"])
        #expect(rows.map(\.devices) == [3, 1])
        #expect(rows.allSatisfy { $0.teamId == "TEAM" && $0.month.count == 7 })
    }

    @Test("an instant is bound as its exact microsecond, alone or in an array, nil as NULL")
    func timestampCodec() throws {
        let db = try Database()
        let instant = Timestamp(microseconds: 1_796_042_096_789_012)
        let instants: [Timestamp?] = [Timestamp(microseconds: -1), nil]
        let query: PGQuery = """
            SELECT (extract(epoch FROM \(instant)::timestamptz) * 1000000)::bigint AS one,
                array_to_string(ARRAY(SELECT coalesce(((extract(epoch FROM t) * 1000000)::bigint)::text, 'null')
                    FROM unnest(\(instants)::timestamptz[]) WITH ORDINALITY AS x(t, o) ORDER BY o), ',') AS many
            """
        let rows = try db.connection.execute(query.sql, query.binds)
        #expect(rows.int(0, 0) == instant.microseconds)
        #expect(rows.string(0, 1) == "-1,null")
    }

    @Test("the probe's setting reads off, then on once the session's transactions are read-only")
    func readOnlySetting() throws {
        let db = try Database()
        #expect(try db.connection.execute(ReadOnlySetting()).readOnly == false)
        try db.connection.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        #expect(try db.connection.execute(ReadOnlySetting()).readOnly == true)
    }
}
