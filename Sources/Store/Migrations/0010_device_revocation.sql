-- 0010: an operator can revoke one device's key (attest-worker device revoke). Its later assertions, and its
-- attestation sent again, get reattest_required/key_revoked; every worker reads revoked_at with the batch's
-- devices, so a revocation applies from each worker's next batch. The reason is the operator's note, bounded.
ALTER TABLE devices ADD COLUMN revoked_at timestamptz;
ALTER TABLE devices ADD COLUMN revoked_reason text CHECK (revoked_reason IS NULL OR octet_length(revoked_reason) <= 512);
