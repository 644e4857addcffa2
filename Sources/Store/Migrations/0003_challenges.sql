-- 0003: challenges issued by the worker (CONTRACT 7 "Challenges"), for apps registered with --challenges worker.

-- One row per issued challenge: 32 random bytes, single use. A job consumes it by setting used_by_job with
-- a conditional UPDATE, so two workers can never both consume it, while a redelivery of the job that
-- consumed it (after a crash before its verdict was stored) still finds it its own.
CREATE TABLE challenges (
    challenge    bytea       PRIMARY KEY CHECK (octet_length(challenge) = 32),
    team_id      text        NOT NULL,
    bundle_id    text        NOT NULL,
    issued_at    timestamptz NOT NULL,
    -- issued_at + the lifetime (5 minutes); compared with the consuming job's receivedAt
    expires_at   timestamptz NOT NULL,
    used_by_job  text,
    used_at      timestamptz,
    FOREIGN KEY (team_id, bundle_id) REFERENCES apps (team_id, bundle_id) ON DELETE CASCADE
);
-- For the purge of old rows (ops/RUNBOOK.md, "Housekeeping").
CREATE INDEX challenges_expires ON challenges (expires_at);
