-- 0005: a batch's monthly counts are tallied from the rows its insert returns, in the same statement, so
-- the counting transaction's id is no longer needed to find them (and finding them by it took a scan of
-- mad_devices per batch). Receipts (several KB of signed CMS) are stored out of line without the
-- compression attempt, which gained little and cost every attestation's insert.
ALTER TABLE mad_devices DROP COLUMN counted_tx;
ALTER TABLE devices ALTER COLUMN receipt SET STORAGE EXTERNAL;
