-- 0020: new devices are enrolled for receipt refresh once per statement, not once per row. Each row that
-- 0012's trigger enrolled ran its own INSERT through PL/pgSQL: about 36 µs of PostgreSQL's time per
-- attested device, 2.7 of the attestation statement's 9.4 µs a job in a lane run at 512 jobs a batch
-- (docs/SCALING.md, "0.9.12"). A statement-level trigger reads the statement's inserted rows as one
-- transition table and enrols them in one INSERT. An UPDATE trigger with a column list cannot have a
-- transition table, so a key attested again (the attestation statement's ON CONFLICT branch, which sets
-- attested_at) keeps 0012's row trigger; that branch is rare. Every writer of devices, a worker of an
-- earlier release included, enrols as before: the rolling upgrade needs nothing. A catalog change under a
-- brief lock on devices, waited for at most 2 s (a timeout fails the start, which retries).
SET LOCAL lock_timeout = '2s';

CREATE FUNCTION receipt_refresh_enroll_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO receipt_refresh (key_id, next_due_at)
    SELECT key_id, attested_at FROM inserted_devices WHERE receipt IS NOT NULL
    ON CONFLICT (key_id) DO UPDATE SET next_due_at = EXCLUDED.next_due_at, attempts = 0;
    RETURN NULL;
END
$$;

DROP TRIGGER devices_receipt_refresh ON devices;
CREATE TRIGGER devices_receipt_refresh_inserted AFTER INSERT ON devices REFERENCING NEW TABLE AS inserted_devices
    FOR EACH STATEMENT EXECUTE FUNCTION receipt_refresh_enroll_inserted();
CREATE TRIGGER devices_receipt_refresh AFTER UPDATE OF attested_at ON devices
    FOR EACH ROW WHEN (NEW.receipt IS NOT NULL) EXECUTE FUNCTION receipt_refresh_enroll();
