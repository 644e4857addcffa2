-- 0001: apps, devices and verdicts (CONTRACT 5). Forward-only: later changes are new numbered files.

-- Registered apps and their policy (`attest-worker app`).
CREATE TABLE apps (
    team_id                text        NOT NULL,
    bundle_id              text        NOT NULL,
    -- production | development | any
    environments           text        NOT NULL DEFAULT 'production'
                                       CHECK (environments IN ('production', 'development', 'any')),
    -- worker: challenges are issued and consumed by the worker; backend: only the binding rule applies
    challenges             text        NOT NULL DEFAULT 'backend' CHECK (challenges IN ('worker', 'backend')),
    mad_limit              integer     CHECK (mad_limit IS NULL OR mad_limit >= 0),
    grace_days             integer     NOT NULL DEFAULT 7 CHECK (grace_days >= 0),
    token_lifetime_seconds integer     NOT NULL DEFAULT 3600 CHECK (token_lifetime_seconds > 0),
    custom_claims          jsonb       NOT NULL DEFAULT '{}',
    risk_weights           jsonb       NOT NULL DEFAULT '{}',
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, bundle_id)
);

-- One row per attested key. The counter only moves forward, by compare-and-set.
CREATE TABLE devices (
    key_id                  bytea       PRIMARY KEY CHECK (octet_length(key_id) = 32),
    team_id                 text        NOT NULL,
    bundle_id               text        NOT NULL,
    public_key              bytea       NOT NULL CHECK (octet_length(public_key) = 65),
    counter                 bigint      NOT NULL DEFAULT 0 CHECK (counter BETWEEN 0 AND 4294967295),
    environment             text        NOT NULL CHECK (environment IN ('production', 'development')),
    receipt                 bytea,
    device_id               text        NOT NULL,
    fingerprint             text,
    subject_id              text,
    device_model            text,
    os_version              text,
    app_version             text,
    app_build_number        text,
    platform                text,
    attestation_count       integer     NOT NULL DEFAULT 1,
    assertion_count         bigint      NOT NULL DEFAULT 0,
    attested_at             timestamptz NOT NULL,
    last_seen_at            timestamptz NOT NULL
);
CREATE INDEX devices_app ON devices (team_id, bundle_id);
CREATE INDEX devices_fingerprint ON devices (team_id, bundle_id, fingerprint) WHERE fingerprint IS NOT NULL;

-- Every decision, by jobId: a redelivered job republishes `verdict_json` byte for byte. A job_invalid
-- verdict may lack the fields its job lacked.
CREATE TABLE verdicts (
    job_id           text        PRIMARY KEY,
    kind             text        CHECK (kind IN ('attestation', 'assertion')),
    key_id           text,
    team_id          text,
    bundle_id        text,
    ok               boolean     NOT NULL,
    code             text,
    reason           text,
    verdict_json     text        NOT NULL,
    received_at      timestamptz,
    decided_at       timestamptz NOT NULL,
    source_topic     text,
    source_partition integer,
    source_offset    bigint
);
CREATE INDEX verdicts_app_decided ON verdicts (team_id, bundle_id, decided_at);
CREATE INDEX verdicts_key ON verdicts (key_id);
