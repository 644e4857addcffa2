-- 0002: device intelligence and billing (CONTRACT 2, 5, 7): monthly active devices, MAD quotas, risk scores.
-- Written by the worker inside each batch's transaction, only for verdicts the batch newly stored.

-- Each device counted once per app per UTC month (of the job's receivedAt). identity is
-- 'fingerprint:<deviceFingerprint>' or 'key:<keyId hex>' (CONTRACT 7's rule, applied by the worker).
CREATE TABLE mad_devices (
    team_id     text        NOT NULL,
    bundle_id   text        NOT NULL,
    month       date        NOT NULL CHECK (extract(day FROM month) = 1),
    identity    text        NOT NULL,
    -- the key and the job whose accepted verdict counted the device first
    key_id      bytea,
    job_id      text        NOT NULL,
    counted_at  timestamptz NOT NULL,
    -- the counting transaction: its closing tally finds the rows it added by this
    counted_tx  xid8        NOT NULL DEFAULT pg_current_xact_id(),
    PRIMARY KEY (team_id, bundle_id, month, identity)
);

-- The running count per app and month, so quota checks read one row instead of counting.
CREATE TABLE mad_totals (
    team_id    text    NOT NULL,
    bundle_id  text    NOT NULL,
    month      date    NOT NULL,
    devices    integer NOT NULL CHECK (devices >= 0),
    PRIMARY KEY (team_id, bundle_id, month)
);

-- A month's count crossing 80% or 100% of the app's MAD limit, once per month. The 100% row's
-- reached_at starts the grace period after which new devices get quota_exceeded.
CREATE TABLE mad_quota_events (
    team_id     text        NOT NULL,
    bundle_id   text        NOT NULL,
    month       date        NOT NULL,
    threshold   integer     NOT NULL CHECK (threshold IN (80, 100)),
    devices     integer     NOT NULL,
    mad_limit   integer     NOT NULL,
    reached_at  timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, bundle_id, month, threshold)
);

-- Per app and device identity: the history the risk model reads and the latest score with its factors
-- (docs/device-intelligence.md). Counters only grow, by increments, so concurrent workers add up.
CREATE TABLE device_risk (
    team_id              text        NOT NULL,
    bundle_id            text        NOT NULL,
    identity             text        NOT NULL,
    -- the verdicts' deviceId: the first attestation job's deviceId, or a UUID generated once
    device_id            text        NOT NULL,
    attestations         integer     NOT NULL DEFAULT 0,
    last_attestation_at  timestamptz,
    keys                 integer     NOT NULL DEFAULT 0,
    failed_attestations  integer     NOT NULL DEFAULT 0,
    failed_assertions    integer     NOT NULL DEFAULT 0,
    counter_replays      integer     NOT NULL DEFAULT 0,
    -- the attestation-rate window: opened by an attestation, holds those of the next 24 hours
    window_start         timestamptz,
    window_attestations  integer     NOT NULL DEFAULT 0,
    receipt_risk_metric  integer,
    environment          text        CHECK (environment IN ('production', 'development')),
    score                integer     NOT NULL CHECK (score BETWEEN 0 AND 100),
    category             text        NOT NULL CHECK (category IN ('trusted', 'suspicious', 'blocked')),
    factors              jsonb       NOT NULL,
    updated_at           timestamptz NOT NULL,
    PRIMARY KEY (team_id, bundle_id, identity)
);

-- Every change of a device's score, with the factors and the job that caused it.
CREATE TABLE device_risk_history (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    team_id    text        NOT NULL,
    bundle_id  text        NOT NULL,
    identity   text        NOT NULL,
    job_id     text        NOT NULL,
    score      integer     NOT NULL CHECK (score BETWEEN 0 AND 100),
    category   text        NOT NULL CHECK (category IN ('trusted', 'suspicious', 'blocked')),
    factors    jsonb       NOT NULL,
    scored_at  timestamptz NOT NULL
);
CREATE INDEX device_risk_history_device ON device_risk_history (team_id, bundle_id, identity, scored_at);

-- Billing: monthly active devices per app and UTC month ('YYYY-MM').
CREATE VIEW billing_mad_monthly AS
SELECT team_id, bundle_id, to_char(month, 'YYYY-MM') AS month, count(*)::bigint AS devices
FROM mad_devices
GROUP BY team_id, bundle_id, month;

-- Billing: per UTC day of the month, the devices first counted that day and the month's running count.
CREATE VIEW billing_mad_daily AS
SELECT team_id, bundle_id, to_char(month, 'YYYY-MM') AS month, day, new_devices,
    sum(new_devices) OVER (PARTITION BY team_id, bundle_id, month ORDER BY day)::bigint AS devices_to_date
FROM (
    SELECT team_id, bundle_id, month, (counted_at AT TIME ZONE 'UTC')::date AS day, count(*)::bigint AS new_devices
    FROM mad_devices
    GROUP BY team_id, bundle_id, month, (counted_at AT TIME ZONE 'UTC')::date
) AS days;
