import AttestCore
import AttestCrypto
import PostgresClient
import Testing
@testable import Store
@testable import Worker

/// The consume statement's window against the ops/stack PostgreSQL: a challenge admits a job only when
/// issuedAt − skew ≤ receivedAt ≤ expiresAt, to the microsecond, and a job outside it consumes nothing.
@Suite struct ChallengeWindowTests {
    static let teamId = "ABCDE12345"
    static let bundleId = "com.example.window"

    let database: AttestStoreTests.Database

    init() throws {
        database = try AttestStoreTests.Database()
        try database.connection.execute("INSERT INTO apps (team_id, bundle_id, challenges) VALUES ($1, $2, 'worker')", [
            .text(Self.teamId), .text(Self.bundleId),
        ])
    }

    func issue() throws -> IssuedChallenge {
        try #require(try ChallengeStore.insert(try SecureRandom.bytes(32), teamId: Self.teamId, bundleId: Self.bundleId, on: database.connection))
    }

    func consume(_ challenge: IssuedChallenge, jobId: String, at receivedAt: Timestamp, skew: Int64 = 60) throws -> ChallengeOutcome? {
        let claim = ChallengeClaim(
            jobId: jobId, teamId: Self.teamId, bundleId: Self.bundleId, challenge: challenge.bytes, receivedAt: receivedAt,
            skewSeconds: skew)
        return try database.store.consumeChallenges([claim])[jobId]
    }

    func usedBy(_ challenge: IssuedChallenge) throws -> String? {
        try database.connection.execute("SELECT used_by_job FROM challenges WHERE challenge = $1", [.bytes(challenge.bytes)]).string(0, 0)
    }

    static func micros(_ t: Timestamp, _ delta: Int64) -> Timestamp { Timestamp(microseconds: t.microseconds + delta) }

    @Test func theLowerEdgeIsIssuedAtMinusTheSkew() throws {
        let challenge = try issue()
        let earliest = challenge.issuedAt.adding(seconds: -60)
        #expect(try consume(challenge, jobId: "early", at: Self.micros(earliest, -1)) == .notYetIssued)
        #expect(try usedBy(challenge) == nil)
        #expect(try consume(challenge, jobId: "edge", at: earliest) == .consumed)
        #expect(try usedBy(challenge) == "edge")
    }

    @Test func theUpperEdgeIsExpiresAt() throws {
        let challenge = try issue()
        #expect(try consume(challenge, jobId: "late", at: Self.micros(challenge.expiresAt, 1)) == .expired)
        #expect(try usedBy(challenge) == nil)
        #expect(try consume(challenge, jobId: "edge", at: challenge.expiresAt) == .consumed)
    }

    /// The reproduced attack (1 h and 23 h back) and its neighbours; none of them burns the challenge.
    @Test(arguments: [3_600, 82_800, 86_400, 61, 301]) func backdatedJobsConsumeNothing(_ secondsBack: Int64) throws {
        let challenge = try issue()
        #expect(try consume(challenge, jobId: "backdated", at: challenge.issuedAt.adding(seconds: -secondsBack)) == .notYetIssued)
        #expect(try usedBy(challenge) == nil)
        #expect(try consume(challenge, jobId: "real", at: challenge.issuedAt.adding(seconds: 5)) == .consumed)
    }

    @Test func aZeroSkewAdmitsFromTheIssueInstantAndNoSkewOverflows() throws {
        let challenge = try issue()
        #expect(try consume(challenge, jobId: "a", at: Self.micros(challenge.issuedAt, -1), skew: 0) == .notYetIssued)
        #expect(try consume(challenge, jobId: "b", at: challenge.issuedAt, skew: 0) == .consumed)
        let other = try issue()
        #expect(try consume(other, jobId: "c", at: Timestamp(seconds: 0), skew: .max) == .consumed)
    }

    @Test func aBatchMixesOutcomesByJob() throws {
        let challenge = try issue()
        let claims = [("back", challenge.issuedAt.adding(seconds: -3_600)), ("ok", challenge.issuedAt), ("second", challenge.issuedAt)]
            .map { ChallengeClaim(jobId: $0.0, teamId: Self.teamId, bundleId: Self.bundleId, challenge: challenge.bytes, receivedAt: $0.1, skewSeconds: 60) }
        let outcomes = try database.store.consumeChallenges(claims)
        #expect(outcomes == ["back": .notYetIssued, "ok": .consumed, "second": .alreadyUsed])
    }
}
