-- 0006: a jobId is unique within its app, not globally: the verdicts' key becomes (team_id, bundle_id,
-- job_id), so one app's jobId never finds another app's verdict (CONTRACT 5). Jobs that name no valid pair
-- (an App ID prefix of 10 A-Z/0-9 and a bundle identifier, as AppIdentity checks) are scoped to the empty
-- pair; rows stored before are moved into the scope the worker now computes for them, so a redelivery
-- still finds its verdict. No row is lost: the old key was job_id alone, so no two rows can meet.
UPDATE verdicts SET team_id = '', bundle_id = ''
WHERE team_id IS NULL OR bundle_id IS NULL OR team_id !~ '^[A-Z0-9]{10}$'
    OR bundle_id !~ '^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$' OR octet_length(bundle_id) > 255;
ALTER TABLE verdicts ALTER COLUMN team_id SET NOT NULL, ALTER COLUMN bundle_id SET NOT NULL,
    DROP CONSTRAINT verdicts_pkey, ADD PRIMARY KEY (team_id, bundle_id, job_id);
