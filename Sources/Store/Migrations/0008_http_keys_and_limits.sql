-- 0008: challenge issuance authenticated by per-app API keys, and its rate limits shared by every worker.

-- API keys (`attest-worker app key add`). Only the SHA-256 of a key is stored: the key itself is printed
-- once. key_id (the hash's first 16 hex digits) names a key in `app key list|revoke` without being usable.
CREATE TABLE app_api_keys (
    key_hash    bytea       PRIMARY KEY CHECK (octet_length(key_hash) = 32),
    key_id      text        NOT NULL UNIQUE,
    team_id     text        NOT NULL,
    bundle_id   text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz,
    FOREIGN KEY (team_id, bundle_id) REFERENCES apps (team_id, bundle_id) ON DELETE CASCADE
);
CREATE INDEX app_api_keys_app ON app_api_keys (team_id, bundle_id) WHERE revoked_at IS NULL;

-- Token buckets of the HTTP rate limits ('app:TEAM.BUNDLE', 'ip:ADDRESS', 'unauthenticated'), each taken by
-- one atomic upsert per request, so N workers admit one rate, not N. A bucket idle for longer than it
-- takes to refill is the same as no row: the purge deletes those.
CREATE TABLE http_rate_buckets (
    bucket      text             PRIMARY KEY,
    tokens      double precision NOT NULL,
    updated_at  timestamptz      NOT NULL,
    -- whether the last take found a token (what the upsert reports)
    granted     boolean          NOT NULL
);
CREATE INDEX http_rate_buckets_updated ON http_rate_buckets (updated_at);
