-- 0007: failures count against a device only within a failure window (docs/device-intelligence.md): the
-- window opens at a counted failure, holds the failures of the next 24 hours, and the first failure after
-- it opens a new one. failed_attestations, failed_assertions and counter_replays become that window's counts.
ALTER TABLE device_risk ADD COLUMN failure_window_start timestamptz;

-- The counters so far are totals that cannot be told apart into failures the device's key or Apple
-- vouched for and forged ones carrying its keyId. Every one of them was received by the row's last change
-- (updated_at, the receivedAt of that job), so they are taken as one window opened then: they count for
-- at most a day more, and not at all when the row has not changed for a day.
UPDATE device_risk SET failure_window_start = updated_at
WHERE failed_attestations + failed_assertions + counter_replays > 0;
