import AttestCore
import PostgresClient

/// The SQL of `verdict_claims` (migration 0021): one row per jobId whose verdict is stored, keyed by
/// `verdict_claim_key(team, bundle, jobId)` (SHA-256 of the three, lengths first) and naming the verdict's
/// partition time, so a batch finds a stored verdict by one primary-key lookup however many partitions
/// retention keeps. The batch's verdict statements write their claims themselves
/// (``VerdictsTable/Attestations``, ``VerdictsTable/Decisions``); any other writer of `verdicts` gets them
/// from the migration's row trigger.
enum VerdictClaimsTable {
    /// The batch's first statement after `BEGIN`: says for the transaction that its verdict statements write
    /// their own claims, so the row trigger leaves them be.
    struct WrittenByBatch: PGCommandStatement {
        var query: PGQuery { "SELECT set_config('attest.claims', 'written', true)" }
    }

    /// Removes the claims the gather found stale (no verdict where the claim says), before the batch
    /// stores those jobs' verdicts and claims again.
    struct DeleteStale: PGCommandStatement {
        let jobs: [ScopedJobId]

        var query: PGQuery {
            """
            DELETE FROM verdict_claims WHERE key = ANY(ARRAY(
                SELECT verdict_claim_key(team, bundle, job)
                FROM unnest(\(jobs.map(\.app.teamId))::text[], \(jobs.map(\.app.bundleId))::text[], \(jobs.map(\.jobId))::text[]) AS x(team, bundle, job)))
            """
        }
    }

    /// Deletes up to `limit` claims of verdicts older than the retention (`before`): their partitions are
    /// dropped or about to be, and a redelivery that old is past the contract.
    struct Purge: PGOneRowStatement {
        let before: Timestamp
        let limit: Int64

        var query: PGQuery {
            """
            WITH d AS (
                DELETE FROM verdict_claims WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM verdict_claims WHERE partition_at < \(before)::timestamptz LIMIT \(limit)))
                RETURNING 1)
            SELECT count(*) AS deleted FROM d
            """
        }

        struct Row: PGRowDecodable {
            let deleted: Int64
            init(row: PGRow) throws(PGError) { deleted = try row.decode("deleted") }
        }
    }

    /// Clears migration 0021's backlog once no verdict is stored below its bound: every verdict left has a
    /// claim, and the gather stops probing partitions for those that had none. The bound is read first so
    /// that the check reads only the partitions below it.
    struct SettleBacklog: PGCommandStatement {
        var query: PGQuery {
            """
            WITH b AS (SELECT before FROM verdict_claims_backlog WHERE before IS NOT NULL)
            UPDATE verdict_claims_backlog SET before = NULL
            WHERE before IS NOT NULL AND NOT EXISTS (SELECT 1 FROM verdicts WHERE partition_at < (SELECT before FROM b))
            """
        }
    }
}
