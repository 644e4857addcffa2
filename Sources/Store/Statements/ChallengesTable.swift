import AttestCore
import AttestJobs
import PostgresClient

/// The SQL of `challenges` (see ``ChallengeStore`` for the rules it carries out).
enum ChallengesTable {
    /// Stores a fresh challenge for a registered app, stamped by the database's clock; no row when the app
    /// is not registered.
    struct Insert: PGOptionalRowStatement {
        let bytes: [UInt8]
        let teamId: String
        let bundleId: String
        let lifetimeSeconds: Int64

        init(_ bytes: [UInt8], teamId: String, bundleId: String, lifetimeSeconds: Int64) {
            self.bytes = bytes
            self.teamId = teamId
            self.bundleId = bundleId
            self.lifetimeSeconds = lifetimeSeconds
        }

        var query: PGQuery {
            """
            INSERT INTO challenges (challenge, team_id, bundle_id, issued_at, expires_at)
            SELECT \(bytes), team_id, bundle_id, now(), now() + \(lifetimeSeconds)::bigint * interval '1 second'
            FROM apps WHERE team_id = \(teamId) AND bundle_id = \(bundleId)
            RETURNING (extract(epoch FROM issued_at) * 1000000)::bigint AS issued_at_us,
                (extract(epoch FROM expires_at) * 1000000)::bigint AS expires_at_us
            """
        }

        struct Row: PGRowDecodable {
            let issuedAt: Timestamp
            let expiresAt: Timestamp

            init(row: PGRow) throws(PGError) {
                issuedAt = Timestamp(microseconds: try row.decode("issued_at_us"))
                expiresAt = Timestamp(microseconds: try row.decode("expires_at_us"))
            }
        }
    }

    /// Settles a batch's claims: each claim's ``ChallengeOutcome`` by its jobId, every claim answered. The
    /// challenges are read and locked by the claims' challenges as one array (`= ANY(ARRAY(…))`), which
    /// only the primary key serves: as a join and a semi-join, a plan made while the table was analyzed
    /// empty (as it is after a quiet spell's purge) read every challenge on every batch.
    struct Consume: PGStatement {
        var query: PGQuery {
            """
            WITH claim AS (
                SELECT x.j AS job_id, x.t AS team_id, x.b AS bundle_id, x.c AS challenge, x.r AS received_at,
                    x.s AS skew, x.o AS ord
                FROM unnest(\(claims.map(\.jobId))::text[], \(claims.map(\.teamId))::text[], \(claims.map(\.bundleId))::text[],
                    \(claims.map(\.challenge))::bytea[], \(claims.map(\.receivedAt))::timestamptz[], \(claims.map(\.skewSeconds))::int8[])
                    WITH ORDINALITY AS x(j, t, b, c, r, s, o)),
            found AS (
                SELECT claim.job_id, claim.challenge, claim.received_at, claim.ord, ch.used_by_job, ch.expires_at,
                    extract(epoch FROM claim.received_at) + claim.skew < extract(epoch FROM ch.issued_at) AS backdated
                FROM claim JOIN challenges ch ON ch.challenge = claim.challenge AND ch.team_id = claim.team_id
                    AND ch.bundle_id = claim.bundle_id
                WHERE ch.challenge = ANY(ARRAY(SELECT challenge FROM claim))),
            claimant AS (
                SELECT DISTINCT ON (challenge) challenge, job_id FROM found
                WHERE received_at <= expires_at AND NOT backdated AND (used_by_job IS NULL OR used_by_job = job_id)
                ORDER BY challenge, used_by_job IS NULL, ord),
            locked AS (
                SELECT challenge FROM challenges WHERE challenge = ANY(ARRAY(SELECT challenge FROM claimant))
                ORDER BY challenge FOR UPDATE),
            used AS (
                UPDATE challenges ch SET used_by_job = claimant.job_id, used_at = coalesce(ch.used_at, now())
                FROM claimant
                WHERE ch.challenge = claimant.challenge AND ch.challenge = ANY(ARRAY(SELECT challenge FROM locked))
                    AND (ch.used_by_job IS NULL OR ch.used_by_job = claimant.job_id)
                RETURNING claimant.job_id)
            SELECT claim.job_id,
                CASE WHEN claim.job_id IN (SELECT job_id FROM used) THEN 'consumed'
                    WHEN found.job_id IS NULL THEN 'unknown'
                    WHEN claim.received_at > found.expires_at THEN 'expired'
                    WHEN found.backdated THEN 'not_yet_issued'
                    ELSE 'already_used' END AS outcome
            FROM claim LEFT JOIN found ON found.job_id = claim.job_id
            """
        }

        /// The claims as parallel arrays; their ordinality keeps the batch order for "earliest claim wins".
        private let claims: [ChallengeClaim]

        init(_ claims: [ChallengeClaim]) { self.claims = claims }

        struct Row: PGRowDecodable {
            let jobId: String
            let outcome: ChallengeOutcome

            init(row: PGRow) throws(PGError) {
                jobId = try row.decode("job_id")
                outcome = try row.decode("outcome")
            }
        }

        /// Every claim has a row (the claims are the LEFT JOIN's left side); one missing is an error, never
        /// a claim left unsettled.
        func result(_ rows: PGDecodedRows<Row>) throws(PGError) -> [String: ChallengeOutcome] {
            let outcomes = Dictionary(rows.rows.map { ($0.jobId, $0.outcome) }, uniquingKeysWith: { _, last in last })
            guard claims.map(\.jobId).allSatisfy({ outcomes[$0] != nil }) else {
                throw PGError(code: .unexpectedRowCount, message: "ChallengesTable.Consume: a claim has no row")
            }
            return outcomes
        }
    }

    /// Deletes up to `limit` challenges that expired more than `retainSeconds` ago, oldest first, skipping
    /// rows another purge holds; the result is how many went.
    struct Purge: PGAffectedRowsStatement {
        let retainSeconds: Int64
        let limit: Int

        var query: PGQuery {
            """
            DELETE FROM challenges WHERE challenge IN (
                SELECT challenge FROM challenges WHERE expires_at < now() - \(retainSeconds)::bigint * interval '1 second'
                ORDER BY expires_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            """
        }
    }
}

extension ChallengeOutcome: PGDecodable {}
