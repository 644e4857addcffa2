-- 0009: the events outbox (CONTRACT: the events topic). A batch's commit transaction writes a row for each
-- quota crossing and risk category change it created, so an event exists exactly when its cause was stored;
-- the publisher claims unpublished rows (FOR UPDATE SKIP LOCKED), publishes them and marks them published
-- once the broker has them, and purges published rows after a retention. event_id is deterministic (the
-- cause's identity), so a cause seen twice writes one row.
CREATE TABLE events (
    event_id      text PRIMARY KEY,
    kind          text NOT NULL,
    -- The message key: the app ("teamId.bundleId") or the device ("teamId.bundleId/identity"), so one
    -- app's or device's events keep their order on one partition.
    partition_key text NOT NULL,
    team_id       text NOT NULL,
    bundle_id     text NOT NULL,
    occurred_at   timestamptz NOT NULL,
    -- The kind's own members of the event JSON.
    detail        jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    published_at  timestamptz
);
CREATE INDEX events_unpublished ON events (created_at) WHERE published_at IS NULL;
CREATE INDEX events_published ON events (published_at) WHERE published_at IS NOT NULL;

-- Grace ended is found by time: the months whose 100% crossing is older than the app's grace and whose
-- grace_ended event was not written yet.
ALTER TABLE mad_quota_events ADD COLUMN grace_ended_event boolean NOT NULL DEFAULT false;
CREATE INDEX mad_quota_events_grace_open ON mad_quota_events (reached_at) WHERE threshold = 100 AND NOT grace_ended_event;
