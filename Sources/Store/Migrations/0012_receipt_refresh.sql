-- 0012: refreshing Apple's fraud-risk receipts (docs/device-intelligence.md, "Receipt refresh"). Workers share
-- the schedule through leases on these rows: each claims a few due rows (FOR UPDATE SKIP LOCKED, so two
-- claims never take one row), marks them leased to itself until an expiry, and calls Apple outside any
-- transaction; the outcome is applied only while the lease is still its own. A worker that dies leaves a
-- lease that simply expires. No broker topic, no coordinator: PostgreSQL already holds the devices.

-- One row per device key with a receipt: when it is next due, who holds it, and how the last try went.
CREATE TABLE receipt_refresh (
    key_id           bytea       PRIMARY KEY,
    next_due_at      timestamptz NOT NULL,
    lease_owner      text,
    lease_expires_at timestamptz,
    -- consecutive failed tries (retry_later, rejected): the backoff's exponent; any answer from Apple resets it
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_status      text        CHECK (last_status IN ('refreshed', 'not_modified', 'no_data', 'retry_later',
                                     'misconfigured', 'rejected', 'rate_limited', 'waiting', 'idle', 'unconfigured')),
    last_error       text        CHECK (last_error IS NULL OR octet_length(last_error) <= 512),
    last_attempt_at  timestamptz,
    refreshed_at     timestamptz
);
CREATE INDEX receipt_refresh_due ON receipt_refresh (next_due_at);

-- Every attestation (a new key, or the same key attested again with a new receipt) makes its device due
-- at once; the scheduler then waits for the receipt's own not-before. Only the attestation statement sets
-- attested_at, so a refresh replacing the receipt does not fire this.
CREATE FUNCTION receipt_refresh_enroll() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO receipt_refresh (key_id, next_due_at) VALUES (NEW.key_id, NEW.attested_at)
    ON CONFLICT (key_id) DO UPDATE SET next_due_at = EXCLUDED.next_due_at, attempts = 0;
    RETURN NULL;
END
$$;
CREATE TRIGGER devices_receipt_refresh AFTER INSERT OR UPDATE OF attested_at ON devices
    FOR EACH ROW WHEN (NEW.receipt IS NOT NULL) EXECUTE FUNCTION receipt_refresh_enroll();
INSERT INTO receipt_refresh (key_id, next_due_at) SELECT key_id, attested_at FROM devices WHERE receipt IS NOT NULL;

-- A team whose DeviceCheck key Apple refused (400/401/403) is paused: none of its devices is claimed until
-- paused_until, so a wrong key never turns into a hot loop of refused requests.
CREATE TABLE receipt_refresh_teams (
    team_id      text        PRIMARY KEY,
    paused_until timestamptz NOT NULL,
    status       integer     NOT NULL,
    reason       text        CHECK (reason IS NULL OR octet_length(reason) <= 512),
    updated_at   timestamptz NOT NULL
);

-- Every refreshed metric per device key, by the receipt's creation time (a receipt stored twice is one
-- row); purged in chunks once stored longer ago than the retention.
CREATE TABLE receipt_metrics (
    key_id             bytea       NOT NULL,
    receipt_created_at timestamptz NOT NULL,
    metric             integer     NOT NULL CHECK (metric >= 0),
    stored_at          timestamptz NOT NULL,
    PRIMARY KEY (key_id, receipt_created_at)
);
CREATE INDEX receipt_metrics_stored ON receipt_metrics (stored_at);

-- The latest refreshed metric's receipt creation time and its rise over the one before (the risk model's
-- receipt_risk_metric_growth), beside receipt_risk_metric, so a batch reads them with the device's history.
ALTER TABLE device_risk ADD COLUMN receipt_metric_at timestamptz;
ALTER TABLE device_risk ADD COLUMN receipt_metric_growth integer CHECK (receipt_metric_growth IS NULL OR receipt_metric_growth >= 0);
