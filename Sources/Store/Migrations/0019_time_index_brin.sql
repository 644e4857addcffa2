-- 0019: verdicts by decision time through a BRIN index instead of a btree. No worker statement reads
-- verdicts by decided_at; ops/RUNBOOK.md's checks do (the last hour's verdicts). A btree holds an entry
-- per verdict, and every insert writes its rightmost page, the newest time; verdicts are written in time
-- order, so a BRIN index (a summary per range of pages) serves the same reads for almost nothing per insert
-- (docs/SCALING.md, "Where the batch path stops").
--
-- Built without holding the batches' inserts for longer than a moment. The table's index is created ON
-- ONLY (no partition's built, instant); partitions created or attached from now on get theirs with it.
-- Here each empty partition (the ones ahead; every one of a new database) gets its index at once; partition
-- maintenance builds the others' CONCURRENTLY and attaches them (PartitionMaintainer,
-- PartitionsTable.TimeIndexWork). Once every partition has one the table's index is valid and
-- verdicts_decided is dropped: here when it already is, else by maintenance. Lock waits are bounded as
-- maintenance's are: a timeout fails the start, which retries.
SET LOCAL lock_timeout = '2s';

-- The name of a partition's index by decision time: unique per partition name, within 63 bytes.
CREATE FUNCTION attest_time_index_name(partition text) RETURNS text
    LANGUAGE sql IMMUTABLE
    RETURN left(partition, 40) || '_' || left(md5(partition), 8) || '_brin';

-- Drops verdicts_decided once the BRIN index is valid (every partition's attached): at the end of this
-- migration, and from partition maintenance (PartitionsTable.DropTimeBtree) once it has built the rest.
CREATE FUNCTION attest_time_btree_drop() RETURNS boolean
    LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce((SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('verdicts_decided_brin')), false)
        AND to_regclass('verdicts_decided') IS NOT NULL THEN
        DROP INDEX verdicts_decided;
        RETURN true;
    END IF;
    RETURN false;
END $$;

CREATE INDEX verdicts_decided_brin ON ONLY verdicts USING brin (decided_at);

DO $$
DECLARE
    part record;
    empty boolean;
BEGIN
    FOR part IN
        SELECT c.relname::text AS name, n.nspname::text AS schema
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE i.inhparent = 'verdicts'::regclass
    LOOP
        EXECUTE format('SELECT NOT EXISTS (SELECT FROM %I.%I)', part.schema, part.name) INTO empty;
        CONTINUE WHEN NOT empty;
        EXECUTE format('CREATE INDEX %I ON %I.%I USING brin (decided_at)', attest_time_index_name(part.name), part.schema, part.name);
        EXECUTE format('ALTER INDEX verdicts_decided_brin ATTACH PARTITION %I.%I', part.schema, attest_time_index_name(part.name));
    END LOOP;
END $$;

SELECT attest_time_btree_drop();
