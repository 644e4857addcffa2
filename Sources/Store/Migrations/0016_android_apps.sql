-- Android in the worker (docs/CONTRACT.md section 9): an app may carry an Android package, with the digests of
-- its signing certificates and what it requires of devices, beside or instead of its App ID (an app with a
-- package only is the pair ('android', package)); devices hold Android keys (their SubjectPublicKeyInfo,
-- environment 'android'); verdicts of the Android kinds.
ALTER TABLE apps
    ADD COLUMN android_package text UNIQUE CHECK (android_package IS NULL OR octet_length(android_package) BETWEEN 1 AND 255),
    ADD COLUMN android_signing_digests bytea[] NOT NULL DEFAULT '{}'
        CHECK (cardinality(android_signing_digests) <= 16),
    ADD COLUMN android_require_strongbox boolean NOT NULL DEFAULT false,
    ADD COLUMN android_require_verified_boot boolean NOT NULL DEFAULT false,
    ADD COLUMN android_min_patch_level integer CHECK (android_min_patch_level IS NULL OR android_min_patch_level BETWEEN 190001 AND 999912),
    ADD COLUMN android_min_os_version integer CHECK (android_min_os_version IS NULL OR android_min_os_version >= 0);

ALTER TABLE devices DROP CONSTRAINT devices_environment_check,
    ADD CONSTRAINT devices_environment_check CHECK (environment IN ('production', 'development', 'android'));
ALTER TABLE devices DROP CONSTRAINT devices_public_key_check,
    ADD CONSTRAINT devices_public_key_check CHECK (
        octet_length(public_key) = 65 OR (environment = 'android' AND octet_length(public_key) BETWEEN 1 AND 16384));

ALTER TABLE verdicts DROP CONSTRAINT verdicts_partitioned_kind_check,
    ADD CONSTRAINT verdicts_kind_check
        CHECK (kind IN ('attestation', 'assertion', 'android_attestation', 'android_assertion'));
