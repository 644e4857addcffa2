-- 0004: the digest of the job each verdict decided, so that a later message reusing its jobId with other
-- content is recognised and reported (the first decision stands; CONTRACT 5: verdicts are effectively once).
ALTER TABLE verdicts ADD COLUMN job_sha256 bytea CHECK (job_sha256 IS NULL OR octet_length(job_sha256) = 32);
