-- 0021: a table of the jobIds whose verdicts are stored (verdict_claims), so a batch finds a jobId's stored
-- verdict by one primary-key lookup whatever the number of partitions. Until 0.9.14 the gather probed the
-- key index of every verdicts partition for every job: each partition that holds rows costs a descent, so
-- the probe grew with the retention. `attest-bench lane --stored-days` (docs/SCALING.md, "0.9.15"), medians
-- of alternating runs: PostgreSQL's CPU per job 0.062 ms over 8 days of 50,000 verdicts a day against 0.049
-- with claims, 0.098 over 30 days of 20,000 against 0.068.
--
-- A claim names its verdict's partition_at, so a stored verdict is read from its one partition. Workers of
-- this release write a statement's claims in the statement that writes its verdicts, and say so for their
-- session (attest.claims = 'written'); a writer that does not (a worker of an earlier release during the
-- rolling upgrade, a hand-made insert) gets each claim from the row trigger below. A claim whose verdict is
-- gone (a partition dropped before retention purged its claims, a verdict deleted by hand) is found stale
-- by the next batch of its jobId, which removes it and decides the job.
--
-- Verdicts stored before this migration have no claim. Their partitions are the ones this migration sees:
-- verdict_claims_backlog.before is the upper bound of the newest (or just past the newest verdict the
-- DEFAULT partition holds beyond it), and the gather also probes the partitions below it, until partition
-- maintenance finds no verdict below it and clears it. On a database with no verdict it is NULL from the
-- start. CREATE TRIGGER takes a lock that waits for the inserts in flight and holds new ones until this
-- commits, so no verdict is stored between the bound and the trigger; waited for at most 2 s (a timeout
-- fails the start, which retries).
SET LOCAL lock_timeout = '2s';

-- A claim's key is SHA-256 of the team, bundle and jobId, each but the last preceded by its length in bytes
-- (so no two triples share an encoding): 32 bytes compared as bytes, where the three texts were compared
-- under the database's collation. In psql, over 425,000 claims, the lookup took 3.1 µs a job against 5.3 and
-- the insert 7.2 against 11.1 (docs/SCALING.md, "0.9.15"). Every writer computes it with this function.
CREATE FUNCTION verdict_claim_key(team text, bundle text, job text) RETURNS bytea LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT sha256(int4send(octet_length(team)) || convert_to(team, 'UTF8') || int4send(octet_length(bundle))
        || convert_to(bundle, 'UTF8') || convert_to(job, 'UTF8'))
$$;

CREATE TABLE verdict_claims (
    key bytea PRIMARY KEY CHECK (octet_length(key) = 32),
    partition_at timestamptz NOT NULL
);
-- Retention's purge reads claims by partition time. A btree: the pages purged claims leave are filled by
-- new ones, which would widen a BRIN index's ranges until each covered every time.
CREATE INDEX verdict_claims_partition_at ON verdict_claims (partition_at);

-- Its schema's claims whatever the inserting session's search_path (FROM CURRENT: the migration's).
CREATE FUNCTION verdict_claims_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO verdict_claims (key, partition_at)
    VALUES (verdict_claim_key(NEW.team_id, NEW.bundle_id, NEW.job_id), NEW.partition_at)
    ON CONFLICT (key) DO UPDATE SET partition_at = EXCLUDED.partition_at;
    RETURN NULL;
END
$$;

CREATE TRIGGER verdicts_claim AFTER INSERT ON verdicts FOR EACH ROW
    WHEN (current_setting('attest.claims', true) IS DISTINCT FROM 'written')
    EXECUTE FUNCTION verdict_claims_insert();

CREATE TABLE verdict_claims_backlog (
    single boolean PRIMARY KEY DEFAULT true CHECK (single),
    before timestamptz
);

INSERT INTO verdict_claims_backlog (before)
SELECT CASE WHEN EXISTS (SELECT 1 FROM verdicts) THEN greatest(ranged.upper, beyond.upper) END
FROM (
    SELECT max(CASE WHEN bound ~ 'TO \(MAXVALUE\)' THEN 'infinity'::timestamptz
        ELSE substring(bound FROM 'TO \(''([^'']*)''\)')::timestamptz END) AS upper
    FROM (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'verdicts'::regclass) p
    WHERE bound <> 'DEFAULT') ranged
CROSS JOIN LATERAL (
    SELECT max(partition_at) + interval '1 microsecond' AS upper FROM verdicts
    WHERE ranged.upper IS NULL OR partition_at >= ranged.upper) beyond;
