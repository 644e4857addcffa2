-- 0014: limited-use verdict tokens (issue 28), a token a backend spends once through POST /v1/tokens/consume.

-- The app's policy: every accepted assertion gets a limited-use token (a job may ask for one either way),
-- and such tokens may live shorter than the app's others (NULL: the same lifetime).
ALTER TABLE apps
    ADD COLUMN limited_use_assertions boolean NOT NULL DEFAULT false,
    ADD COLUMN limited_use_lifetime_seconds integer CHECK (limited_use_lifetime_seconds > 0);

-- limitedUse is now a claim the worker sets: a custom claim of that name would be refused by `app set
-- --claims`, and one already stored would make the app's claims fail validation (and all be dropped).
UPDATE apps SET custom_claims = custom_claims - 'limitedUse' WHERE custom_claims ? 'limitedUse';

-- The consumed tokens: one row per spent jti, inserted by the one statement that decides a consumption
-- (INSERT ... ON CONFLICT DO NOTHING), so two workers racing for one token cannot both win. A row is
-- kept until the token's exp plus the skew allowance, after which the token is refused as expired
-- before this table is read; then the worker's purge deletes it (ConsumedTokensTable.Purge).
CREATE TABLE consumed_tokens (
    team_id     text        NOT NULL,
    bundle_id   text        NOT NULL,
    jti         text        NOT NULL CHECK (octet_length(jti) BETWEEN 1 AND 256),
    expires_at  timestamptz NOT NULL,
    consumed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, bundle_id, jti)
);
CREATE INDEX consumed_tokens_expires ON consumed_tokens (expires_at);
