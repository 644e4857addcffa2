-- 0017: a device's receipt is stored out of line without trying to compress it first. A receipt is a CMS
-- structure of signatures and certificates (about 3 KB in the benchmark's, 3.5-5 KB from Apple), which
-- pglz does not shrink, so every attestation paid for a compression attempt that failed before the value
-- went to TOAST anyway: about a tenth of PostgreSQL's CPU per job at throughput (ops/bench, a tenth of the
-- jobs attestations; docs/SCALING.md, "0.9.4"). A catalog change: receipts stored before keep their form,
-- and every later one is written uncompressed. Nothing reads receipts by their form.
ALTER TABLE devices ALTER COLUMN receipt SET STORAGE EXTERNAL;
