-- 0011: verdicts and device_risk_history become range partitions by time, so that retention drops whole
-- partitions (docs/SCALING.md, "Retention") instead of deleting rows one by one. Both tables are rebuilt in
-- this one transaction: the partitioned table, a partition for every UTC day that holds a row, the rows
-- moved, the names swapped. No row is lost: every row's time falls in a day partition created for it. The
-- partitions of now and ahead are the workers' (PartitionMaintainer, at the configured width): until its
-- first round, and whenever it falls behind, the DEFAULT partition takes new rows, and creating their
-- partition moves them there.
--
-- A partitioned table's primary key must contain its partition key, so its unique index (and ON CONFLICT)
-- sees one partition only. verdicts is partitioned by partition_at, which the worker sets to the same value
-- for every redelivery of a job: its receivedAt when that is within the job time bounds (it is part of the
-- job's content), else the decision's time (a job_invalid verdict with no effect). One verdict per
-- (team_id, bundle_id, job_id) across partitions is kept by a trigger (verdicts_one_per_job, below), so a
-- second decision of a jobId, concurrent or not, is skipped whatever its partition time; stored verdicts
-- are read by that key over every partition, so a redelivery and a reused jobId are recognised wherever
-- the first decision is. A row inserted without partition_at is stored under now().

CREATE TABLE verdicts_partitioned (
    job_id           text        NOT NULL,
    kind             text        CHECK (kind IN ('attestation', 'assertion')),
    key_id           text,
    team_id          text        NOT NULL,
    bundle_id        text        NOT NULL,
    ok               boolean     NOT NULL,
    code             text,
    reason           text,
    verdict_json     text        NOT NULL,
    received_at      timestamptz,
    decided_at       timestamptz NOT NULL,
    source_topic     text,
    source_partition integer,
    source_offset    bigint,
    job_sha256       bytea       CHECK (job_sha256 IS NULL OR octet_length(job_sha256) = 32),
    partition_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, bundle_id, job_id, partition_at)
) PARTITION BY RANGE (partition_at);

-- device_risk_history's identity column becomes a sequence's default (PostgreSQL 15 has no identity columns
-- on partitioned tables); ids go on from the old table's.
CREATE SEQUENCE device_risk_history_ids;
SELECT setval('device_risk_history_ids', coalesce((SELECT max(id) FROM device_risk_history), 0) + 1, false);
CREATE TABLE device_risk_history_partitioned (
    id         bigint      NOT NULL DEFAULT nextval('device_risk_history_ids'),
    team_id    text        NOT NULL,
    bundle_id  text        NOT NULL,
    identity   text        NOT NULL,
    job_id     text        NOT NULL,
    score      integer     NOT NULL CHECK (score BETWEEN 0 AND 100),
    category   text        NOT NULL CHECK (category IN ('trusted', 'suspicious', 'blocked')),
    factors    jsonb       NOT NULL,
    scored_at  timestamptz NOT NULL,
    PRIMARY KEY (id, scored_at)
) PARTITION BY RANGE (scored_at);

-- The partition of [lower, upper) of a partitioned table (verdicts or device_risk_history), named
-- <table>_p<lower in UTC>: created on its own, filled with the rows of its range that the DEFAULT partition
-- caught (a worker whose maintenance fell behind), then attached, so creating it never fails on them.
-- Returns how many rows it took from the DEFAULT partition. The worker's partition maintenance calls it
-- under its advisory lock (PartitionsTable.Create).
CREATE FUNCTION attest_partition_create(parent text, from_at timestamptz, to_at timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    part_key text := CASE parent WHEN 'verdicts' THEN 'partition_at' WHEN 'device_risk_history' THEN 'scored_at' END;
    part_name text := parent || '_p' || to_char(from_at AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MISS');
    moved bigint;
BEGIN
    IF part_key IS NULL OR NOT from_at < to_at THEN
        RAISE EXCEPTION 'attest_partition_create: no partition % of % from % to %', part_name, parent, from_at, to_at;
    END IF;
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part_name, parent);
    EXECUTE format(
        'WITH moved AS (DELETE FROM %I WHERE %I >= $1 AND %I < $2 RETURNING *) INSERT INTO %I SELECT * FROM moved',
        parent || '_default', part_key, part_key, part_name) USING from_at, to_at;
    GET DIAGNOSTICS moved = ROW_COUNT;
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', parent, part_name, from_at, to_at);
    RETURN moved;
END $$;

-- Drops one partition of verdicts or device_risk_history (never the DEFAULT one, never another table).
CREATE FUNCTION attest_partition_drop(parent text, child text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF parent NOT IN ('verdicts', 'device_risk_history') OR child = parent || '_default' OR NOT EXISTS (
        SELECT 1 FROM pg_inherits WHERE inhparent = to_regclass(parent) AND inhrelid = to_regclass(quote_ident(child)))
    THEN
        RAISE EXCEPTION 'attest_partition_drop: % is not a partition of %', child, parent;
    END IF;
    EXECUTE format('DROP TABLE %I', child);
END $$;

-- The day partitions every existing row needs, then DEFAULT.
DO $$
DECLARE
    day timestamptz;
BEGIN
    FOR day IN
        SELECT DISTINCT date_trunc('day', t AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' FROM (
            SELECT CASE WHEN received_at BETWEEN decided_at - interval '1 day' AND decided_at + interval '60 seconds'
                THEN received_at ELSE decided_at END AS t FROM verdicts) AS days
    LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF verdicts_partitioned FOR VALUES FROM (%L) TO (%L)',
            'verdicts_p' || to_char(day AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MISS'), day, day + interval '1 day');
    END LOOP;
    FOR day IN
        SELECT DISTINCT date_trunc('day', t AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' FROM (
            SELECT scored_at AS t FROM device_risk_history) AS days
    LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF device_risk_history_partitioned FOR VALUES FROM (%L) TO (%L)',
            'device_risk_history_p' || to_char(day AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MISS'), day, day + interval '1 day');
    END LOOP;
END $$;
CREATE TABLE verdicts_default PARTITION OF verdicts_partitioned DEFAULT;
CREATE TABLE device_risk_history_default PARTITION OF device_risk_history_partitioned DEFAULT;

-- The rows, under the partition time the worker would have given them (at the default time bounds).
INSERT INTO verdicts_partitioned (job_id, kind, key_id, team_id, bundle_id, ok, code, reason, verdict_json,
    received_at, decided_at, source_topic, source_partition, source_offset, job_sha256, partition_at)
SELECT job_id, kind, key_id, team_id, bundle_id, ok, code, reason, verdict_json, received_at, decided_at,
    source_topic, source_partition, source_offset, job_sha256,
    CASE WHEN received_at BETWEEN decided_at - interval '1 day' AND decided_at + interval '60 seconds'
        THEN received_at ELSE decided_at END
FROM verdicts;
INSERT INTO device_risk_history_partitioned (id, team_id, bundle_id, identity, job_id, score, category, factors, scored_at)
SELECT id, team_id, bundle_id, identity, job_id, score, category, factors, scored_at FROM device_risk_history;

DROP TABLE verdicts;
ALTER TABLE verdicts_partitioned RENAME TO verdicts;
ALTER TABLE verdicts RENAME CONSTRAINT verdicts_partitioned_pkey TO verdicts_pkey;
-- By time instead of by app and time: an index led by (team_id, bundle_id) competes with the primary key
-- for the jobId lookups, and on a partition without statistics yet (a new one) the planner may take it and
-- read an app's whole partition per job. App-scoped reads use the primary key's (team_id, bundle_id) prefix.
CREATE INDEX verdicts_decided ON verdicts (decided_at);
CREATE INDEX verdicts_key ON verdicts (key_id);

-- What the unique index did before across the whole table: an insert of a jobId waits for a transaction
-- inserting the same one (a transaction-scoped advisory lock on its key, taken in the inserts' jobId order),
-- then is skipped (as ON CONFLICT DO NOTHING would) if a verdict for it is stored in any partition. Its
-- query sees what committed while it waited (each statement of a volatile function takes a new snapshot),
-- in the schema the migration ran in whatever the inserting session's search_path. Attached partitions
-- inherit the trigger; rows moved by attest_partition_create do not pass it.
CREATE FUNCTION verdicts_one_per_job() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(NEW.team_id || '/' || NEW.bundle_id || '/' || NEW.job_id, 0));
    IF EXISTS (SELECT 1 FROM verdicts WHERE team_id = NEW.team_id AND bundle_id = NEW.bundle_id AND job_id = NEW.job_id) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER verdicts_one_per_job BEFORE INSERT ON verdicts FOR EACH ROW EXECUTE FUNCTION verdicts_one_per_job();

DROP TABLE device_risk_history;
ALTER TABLE device_risk_history_partitioned RENAME TO device_risk_history;
ALTER TABLE device_risk_history RENAME CONSTRAINT device_risk_history_partitioned_pkey TO device_risk_history_pkey;
ALTER SEQUENCE device_risk_history_ids OWNED BY device_risk_history.id;
CREATE INDEX device_risk_history_device ON device_risk_history (team_id, bundle_id, identity, scored_at);

-- Billing retention (ATTEST_BILLING_RETENTION_MONTHS) deletes old months in chunks, by month.
CREATE INDEX mad_devices_month ON mad_devices (month);
