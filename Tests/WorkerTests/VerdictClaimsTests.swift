import AttestCore
import AttestJobs
import Foundation
import PostgresClient
import Testing
@testable import Store

/// The claims of stored verdicts (migration 0021) against the ops/stack PostgreSQL, each test in a schema of
/// its own: every verdict stored has its claim, whoever stores it; a batch answers a jobId from its claim's
/// verdict, from a verdict older than the claims while the migration's backlog holds it, and decides a job
/// whose claim went stale instead of wedging on it.
@Suite struct VerdictClaimsTests {
    typealias R = PartitionRetentionStoreTests
    static let day = Timestamp(seconds: 1_796_083_200)

    /// Verdicts with no claim naming their partition time, and claims with no verdict where they say.
    static func unmatched(_ db: R.Schema) throws -> (verdicts: Int64, claims: Int64) {
        let key = "c.key = verdict_claim_key(v.team_id, v.bundle_id, v.job_id) AND c.partition_at = v.partition_at"
        return (
            try db.count("SELECT count(*) FROM verdicts v WHERE NOT EXISTS (SELECT 1 FROM verdict_claims c WHERE \(key))"),
            try db.count("SELECT count(*) FROM verdict_claims c WHERE NOT EXISTS (SELECT 1 FROM verdicts v WHERE \(key))")
        )
    }

    @Test func everyVerdictTheBatchStoresHasItsClaimOnBothWritePaths() throws {
        let db = try R.Schema()
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: db.url))
        _ = try db.connection.execute(PartitionsTable.Create(table: "verdicts", lower: Self.day, upper: Self.day.adding(seconds: 86_400)))
        var attested = ScopedVerdictStoreTests.attested("a1", R.app, digest: 1, key: 0xa)
        attested.partitionAt = Self.day.adding(seconds: 60)
        let decisions = [R.decision("d1", at: Self.day.adding(seconds: 10)), attested, R.decision("d2", at: Self.day.adding(seconds: 20))]
        #expect(try store.commit(decisions).outcomes == [.stored, .stored, .stored])
        #expect(try db.count("SELECT count(*) FROM verdict_claims") == 3)
        #expect(try Self.unmatched(db) == (0, 0))
    }

    @Test func aVerdictAWriterOfAnEarlierReleaseStoresGetsItsClaimFromTheTrigger() throws {
        let db = try R.Schema()
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: db.url))
        let at = Self.day.adding(seconds: 3_600).rfc3339
        // As 0.9.14's statements insert a verdict: no claim of their own, no session setting.
        try db.connection.execute(
            """
            INSERT INTO verdicts (job_id, team_id, bundle_id, ok, verdict_json, decided_at, partition_at, job_sha256)
            VALUES ('old-writer', $1, $2, false, '{"jobId":"old-writer"}', $3::timestamptz, $3::timestamptz, $4)
            """, [.text(R.app.teamId), .text(R.app.bundleId), .text(at), .bytes([UInt8](repeating: 1, count: 32))])
        #expect(try Self.unmatched(db) == (0, 0))
        let outcomes = try store.commit([R.decision("old-writer", at: Self.day.adding(seconds: 7_200), digest: 2)]).outcomes
        guard case .alreadyDecided(let stored) = outcomes.first else {
            Issue.record("expected the earlier writer's verdict, got \(outcomes)")
            return
        }
        #expect(stored.json == #"{"jobId":"old-writer"}"#)
        #expect(try db.count("SELECT count(*) FROM verdicts") == 1)
    }

    /// A claim's key tells every (team, bundle, jobId) apart, however their texts would run together.
    @Test func theClaimKeyKeepsTheThreeTextsApart() throws {
        let db = try R.Schema()
        let triples = [("T", "a/b", "c"), ("T", "a", "b/c"), ("Ta", "b", "c"), ("T", "ab", "c"), ("T", "a", "bc"), ("", "Ta", "bc")]
        var keys = Set<String>()
        for (team, bundle, job) in triples {
            let row = try db.connection.execute(
                "SELECT encode(verdict_claim_key($1, $2, $3), 'hex')", [.text(team), .text(bundle), .text(job)])
            keys.insert(try #require(row.string(0, 0)))
        }
        #expect(keys.count == triples.count)
        #expect(keys.allSatisfy { $0.count == 64 })
    }

    /// A verdict stored before migration 0021 has no claim: while the backlog's bound is above its
    /// partition time the probe finds it; once maintenance has cleared the bound, it no longer looks.
    @Test func aVerdictWithoutAClaimIsFoundWhileTheBacklogHoldsIt() throws {
        let db = try R.Schema()
        let at = Self.day.adding(seconds: 3_600)
        try db.connection.execute("SET attest.claims = 'written'")  // no trigger: a verdict from before the claims
        try db.connection.execute(
            """
            INSERT INTO verdicts (job_id, team_id, bundle_id, ok, verdict_json, decided_at, partition_at)
            VALUES ('before-claims', $1, $2, false, '{}', $3::timestamptz, $3::timestamptz)
            """, [.text(R.app.teamId), .text(R.app.bundleId), .text(at.rfc3339)])
        try db.connection.execute("RESET attest.claims")
        #expect(try Self.unmatched(db) == (1, 0))
        let probe = VerdictsTable.Stored(jobs: [ScopedJobId(app: R.app, jobId: "before-claims")])
        #expect(try db.connection.execute(probe).isEmpty)  // a fresh schema's backlog is empty
        try db.connection.execute("UPDATE verdict_claims_backlog SET before = $1::timestamptz", [.text(at.adding(seconds: 1).rfc3339)])
        #expect(try db.connection.execute(probe).compactMap(\.verdict).map(\.json) == ["{}"])
        try db.connection.execute("UPDATE verdict_claims_backlog SET before = $1::timestamptz", [.text(at.rfc3339)])
        #expect(try db.connection.execute(probe).isEmpty)  // strictly below the bound
    }

    /// A claim whose verdict is gone (here deleted by hand) is stale: the next batch of its jobId decides
    /// the job, removes the claim and stores the verdict with a claim of its own, in one settle.
    @Test func aStaleClaimIsReplacedAndItsJobDecided() throws {
        let db = try R.Schema()
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: db.url))
        let first = Self.day.adding(seconds: 60)
        #expect(try store.commit([R.decision("j1", at: first)]).outcomes == [.stored])
        try db.connection.execute("DELETE FROM verdicts")
        #expect(try Self.unmatched(db) == (0, 1))
        let second = Self.day.adding(seconds: 7_200)
        #expect(try store.commit([R.decision("j1", at: second, digest: 2)]).outcomes == [.stored])
        #expect(try Self.unmatched(db) == (0, 0))
        let claimed = try db.connection.execute("SELECT to_char(partition_at AT TIME ZONE 'UTC', 'HH24:MI') FROM verdict_claims")
        #expect(claimed.count == 1 && claimed.string(0, 0) == "02:00")
    }

    /// The migration's backlog bound: none on a database without verdicts; else above every verdict stored
    /// before it, the newest partition's upper bound or, past it, the DEFAULT partition's newest.
    @Test func theMigrationBoundsTheVerdictsItFindsWithoutClaims() throws {
        #expect(try R.Schema().count("SELECT count(*) FROM verdict_claims_backlog WHERE before IS NULL") == 1)
        let bound = "SELECT (extract(epoch FROM before) * 1000000)::bigint FROM verdict_claims_backlog"
        let partitioned = Self.day.adding(seconds: 60)
        let beyond = Self.day.adding(seconds: 5 * 86_400)
        for stored in [[partitioned], [partitioned, beyond]] {
            let db = try R.Schema(upTo: 20)
            _ = try db.connection.execute(PartitionsTable.Create(table: "verdicts", lower: Self.day, upper: Self.day.adding(seconds: 86_400)))
            for (n, at) in stored.enumerated() {
                try db.connection.execute(
                    """
                    INSERT INTO verdicts (job_id, team_id, bundle_id, ok, verdict_json, decided_at, partition_at)
                    VALUES ($1, $2, $3, false, '{}', $4::timestamptz, $4::timestamptz)
                    """, [.text("j\(n)"), .text(R.app.teamId), .text(R.app.bundleId), .text(at.rfc3339)])
            }
            _ = try Migrator.migrate(db.connection, migrations: Migrator.bundled)
            let expected = stored.count == 1 ? Self.day.adding(seconds: 86_400).microseconds : beyond.microseconds + 1
            #expect(try db.count(bound) == expected)
            #expect(try db.count("SELECT count(*) FROM verdict_claims") == 0)
            let probe = VerdictsTable.Stored(jobs: stored.indices.map { ScopedJobId(app: R.app, jobId: "j\($0)") })
            #expect(try db.connection.execute(probe).compactMap(\.verdict).count == stored.count)
        }
    }
}
