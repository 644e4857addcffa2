-- Google's Android attestation certificate status list, shared by every worker (docs/CONTRACT.md section 9):
-- the newest list fetched (or loaded from ATTEST_ANDROID_STATUS_LIST_FILE) and when the next fetch is due.
-- One row. Workers read its digest each round and load the body only when it changed; the worker whose
-- round finds a fetch due takes it by moving next_fetch_at ahead (a lease), so one worker fetches at a time.
CREATE TABLE android_status_list (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    body bytea NOT NULL,
    sha256 bytea NOT NULL,
    entries integer NOT NULL,
    source text NOT NULL,
    fetched_at timestamptz NOT NULL,
    next_fetch_at timestamptz NOT NULL,
    last_failure text,
    last_failure_at timestamptz
);
