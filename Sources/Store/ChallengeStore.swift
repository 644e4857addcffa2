import AttestCore
import AttestJobs
import PostgresClient

/// Worker-issued challenges in PostgreSQL (CONTRACT 7 "Challenges"): storing what ``ChallengeIssuer`` issues,
/// and the batched, single-use consumption the pipeline performs. State lives only in the database, so any
/// worker may consume what any other issued.
public enum ChallengeStore {
    /// CONTRACT 7: a challenge is valid for five minutes from issue to the consuming job's receivedAt.
    public static let lifetimeSeconds: Int64 = 300
    /// CONTRACT 7: challenges are 32 random bytes.
    public static let byteCount = 32

    /// Stores `bytes` as a fresh challenge for a registered app, in one statement that also checks the
    /// registration; nil when the app is not registered. The database's clock stamps it, so every worker and
    /// the CLI agree on issue times.
    static func insert(_ bytes: [UInt8], teamId: String, bundleId: String, on c: PGConnection) throws(PGError) -> IssuedChallenge? {
        guard let row = try c.execute(ChallengesTable.Insert(bytes, teamId: teamId, bundleId: bundleId, lifetimeSeconds: lifetimeSeconds))
        else { return nil }
        return IssuedChallenge(bytes: bytes, teamId: teamId, bundleId: bundleId, issuedAt: row.issuedAt, expiresAt: row.expiresAt)
    }

    /// Settles every claim of a batch in one statement, by jobId. A challenge goes to one claimant only —
    /// the job that already holds it (a redelivery after a crash), else the earliest claim in the batch —
    /// and only while unused: the conditional UPDATE re-checks `used_by_job` after waiting for a concurrent
    /// consumer's row lock, so two workers can never both consume it. The rows are locked in challenge
    /// order first (`locked`), so two batches presenting the same challenges cannot deadlock.
    ///
    /// A challenge admits only jobs with issued_at − skew ≤ receivedAt ≤ expires_at; a job outside that
    /// window does not consume it (its receivedAt is the producer's word, so a backdated or late job must
    /// not burn the challenge for the app's real job). The window is compared in `numeric` seconds, which
    /// cannot overflow whatever the configured skew.
    static func consume(_ claims: [ChallengeClaim], on c: PGConnection) throws(PGError) -> [String: ChallengeOutcome] {
        guard !claims.isEmpty else { return [:] }
        return try c.execute(ChallengesTable.Consume(claims))
    }

    /// Deletes up to `limit` challenges that expired more than `retainSeconds` ago by the database's clock
    /// (the one that stamped them), oldest first; rows another purge holds are skipped. Returns how many.
    static func purge(retainSeconds: Int64, limit: Int, on c: PGConnection) throws(PGError) -> Int {
        try c.execute(ChallengesTable.Purge(retainSeconds: retainSeconds, limit: limit))
    }
}

extension AttestStore {
    /// Deletes the challenges that expired more than `retainSeconds` ago, `chunk` rows per statement
    /// (each its own short transaction) until none is left; returns how many.
    public func purgeChallenges(retainSeconds: Int64, chunk: Int = 10_000) throws(PGError) -> Int {
        try purgeInChunks(chunk) { c, limit throws(PGError) in try ChallengeStore.purge(retainSeconds: retainSeconds, limit: limit, on: c) }
    }

    /// Runs `delete` (up to `limit` rows, its own short transaction) until it deletes fewer than `chunk`, so a
    /// large backlog never holds locks or grows WAL in one statement; returns how many rows went.
    func purgeInChunks(_ chunk: Int, _ delete: (PGConnection, Int) throws(PGError) -> Int) throws(PGError) -> Int {
        var total = 0
        while true {
            let deleted = try connection.run { c throws(PGError) in try delete(c, chunk) }
            total += deleted
            if deleted < chunk { return total }
        }
    }

    /// The batch's challenge claims, settled in one round trip (``ChallengeStore/consume(_:on:)``).
    public func consumeChallenges(_ claims: [ChallengeClaim]) throws(PGError) -> [String: ChallengeOutcome] {
        guard !claims.isEmpty else { return [:] }
        return try connection.run { c throws(PGError) in try ChallengeStore.consume(claims, on: c) }
    }
}
