-- 0021: the counted devices lose their index by month (mad_devices_month, from 0011). Retention's purge was
-- its only reader; it now walks the primary key app by app (team, bundle, then the months before the
-- cutoff). The batch's read of which devices a month has counted names the whole primary key, but a plan
-- made while the table was analyzed with few rows could take the month's index instead and filter the
-- month's every counted device by the rest of the key: 14 µs a job in a lane run on the stack's database
-- (docs/SCALING.md, "0.9.15"), and more as the month's devices grow, until autovacuum analyzed the table
-- again. Without the index no plan can, and each newly counted device writes one index entry fewer.
-- A catalog change under a brief exclusive lock on mad_devices, waited for at most 2 s (a timeout fails the
-- start, which retries).
SET LOCAL lock_timeout = '2s';

DROP INDEX IF EXISTS mad_devices_month;
