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
        let rows = try c.execute(
            """
            INSERT INTO challenges (challenge, team_id, bundle_id, issued_at, expires_at)
            SELECT $1, team_id, bundle_id, now(), now() + $4::bigint * interval '1 second'
            FROM apps WHERE team_id = $2 AND bundle_id = $3
            RETURNING (extract(epoch FROM issued_at) * 1000000)::bigint, (extract(epoch FROM expires_at) * 1000000)::bigint
            """,
            [.bytes(bytes), .text(teamId), .text(bundleId), .int(lifetimeSeconds)])
        guard rows.count == 1, let issued = rows.int(0, 0), let expires = rows.int(0, 1) else { return nil }
        return IssuedChallenge(
            bytes: bytes, teamId: teamId, bundleId: bundleId, issuedAt: Timestamp(microseconds: issued),
            expiresAt: Timestamp(microseconds: expires))
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
        let payload = JSONValue.array(
            claims.enumerated().map { index, claim in
                .object([
                    ("j", .string(claim.jobId)), ("t", .string(claim.teamId)), ("b", .string(claim.bundleId)),
                    ("c", .string(Hex.encode(claim.challenge))), ("r", .string(claim.receivedAt.rfc3339)),
                    ("s", .int(claim.skewSeconds)), ("o", .int(Int64(index))),
                ])
            })
        let rows = try c.execute(
            """
            WITH claim AS (
                SELECT x.j AS job_id, x.t AS team_id, x.b AS bundle_id, decode(x.c, 'hex') AS challenge,
                    x.r AS received_at, x.s AS skew, x.o AS ord
                FROM jsonb_to_recordset($1::jsonb) AS x(j text, t text, b text, c text, r timestamptz, s bigint, o integer)),
            found AS (
                SELECT claim.job_id, claim.challenge, claim.received_at, claim.ord, ch.used_by_job, ch.expires_at,
                    extract(epoch FROM claim.received_at) + claim.skew < extract(epoch FROM ch.issued_at) AS backdated
                FROM claim JOIN challenges ch ON ch.challenge = claim.challenge AND ch.team_id = claim.team_id
                    AND ch.bundle_id = claim.bundle_id),
            claimant AS (
                SELECT DISTINCT ON (challenge) challenge, job_id FROM found
                WHERE received_at <= expires_at AND NOT backdated AND (used_by_job IS NULL OR used_by_job = job_id)
                ORDER BY challenge, used_by_job IS NULL, ord),
            locked AS (
                SELECT challenge FROM challenges WHERE challenge IN (SELECT challenge FROM claimant)
                ORDER BY challenge FOR UPDATE),
            used AS (
                UPDATE challenges ch SET used_by_job = claimant.job_id, used_at = coalesce(ch.used_at, now())
                FROM claimant
                WHERE ch.challenge = claimant.challenge AND ch.challenge IN (SELECT challenge FROM locked)
                    AND (ch.used_by_job IS NULL OR ch.used_by_job = claimant.job_id)
                RETURNING claimant.job_id)
            SELECT claim.job_id,
                CASE WHEN claim.job_id IN (SELECT job_id FROM used) THEN 'consumed'
                    WHEN found.job_id IS NULL THEN 'unknown'
                    WHEN claim.received_at > found.expires_at THEN 'expired'
                    WHEN found.backdated THEN 'not_yet_issued'
                    ELSE 'already_used' END
            FROM claim LEFT JOIN found ON found.job_id = claim.job_id
            """,
            [.json(payload.serialized())])
        var outcomes = [String: ChallengeOutcome]()
        for r in 0..<rows.count {
            if let jobId = rows.string(r, 0), let outcome = rows.string(r, 1).flatMap(ChallengeOutcome.init(rawValue:)) {
                outcomes[jobId] = outcome
            }
        }
        return outcomes
    }

    /// Deletes up to `limit` challenges that expired more than `retainSeconds` ago by the database's clock
    /// (the one that stamped them), oldest first; rows another purge holds are skipped. Returns how many.
    static func purge(retainSeconds: Int64, limit: Int, on c: PGConnection) throws(PGError) -> Int {
        try c.execute(
            """
            DELETE FROM challenges WHERE challenge IN (
                SELECT challenge FROM challenges WHERE expires_at < now() - $1::bigint * interval '1 second'
                ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            """,
            [.int(retainSeconds), .int(Int64(limit))]
        ).affectedRows
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
