-- 0013: one verdict per (team_id, bundle_id, job_id) across partitions is kept by the worker's commit instead
-- of migration 0011's row trigger, which cost about 0.1 ms of PostgreSQL CPU per verdict (a PL/pgSQL call,
-- an advisory lock and a probe of every attached partition, repeating the probe the insert statements
-- already make). The commit's first statement now takes the same transaction-scoped advisory locks, for
-- the whole batch in key order (VerdictsTable.JobLocks), so every later statement of the transaction runs
-- on a snapshot taken after a concurrent insert of the same jobId committed, and the insert statements skip
-- a jobId stored in any partition (docs/SCALING.md, "Retention"). Workers of the version before this one
-- relied on the trigger: roll a group over by stopping them before the first worker of this version starts
-- (it migrates), or accept that a jobId reused across partitions while both run may be stored twice.
--
-- verdicts_key (verdicts by key_id) goes as well: no statement reads verdicts by key, and every insert paid
-- for it in CPU and WAL.
DROP TRIGGER verdicts_one_per_job ON verdicts;
DROP FUNCTION verdicts_one_per_job();
DROP INDEX verdicts_key;
