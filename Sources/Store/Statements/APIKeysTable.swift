import AttestJobs
import PostgresClient

/// The SQL of `app_api_keys` (see ``APIKeyStore``).
enum APIKeysTable {
    /// The app's unrevoked key hashes, at most `limit`.
    struct ActiveHashes: PGStatement {
        let teamId: String
        let bundleId: String
        let limit: Int

        var query: PGQuery {
            "SELECT key_hash FROM app_api_keys WHERE team_id = \(teamId) AND bundle_id = \(bundleId) AND revoked_at IS NULL LIMIT \(limit)"
        }

        struct Row: PGRowDecodable {
            let keyHash: [UInt8]
            init(row: PGRow) throws(PGError) { keyHash = try row.decode("key_hash") }
        }
    }

    /// The app an unrevoked key belongs to; no row for a key that is not one (or is revoked).
    struct Owner: PGOptionalRowStatement {
        let hash: [UInt8]

        var query: PGQuery { "SELECT team_id, bundle_id FROM app_api_keys WHERE key_hash = \(hash) AND revoked_at IS NULL" }

        struct Row: PGRowDecodable {
            let app: AppIdentity
            init(row: PGRow) throws(PGError) { app = AppIdentity(teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id")) }
        }
    }

    /// Locks the app's row while its keys are counted (so two adds cannot pass the limit); no row when the
    /// app is not registered.
    struct LockApp: PGOptionalRowStatement {
        typealias Row = PGNoRow
        let teamId: String
        let bundleId: String

        var query: PGQuery { "SELECT 1 FROM apps WHERE team_id = \(teamId) AND bundle_id = \(bundleId) FOR UPDATE" }
    }

    /// How many unrevoked keys the app has.
    struct CountActive: PGOneRowStatement {
        let teamId: String
        let bundleId: String

        var query: PGQuery {
            "SELECT count(*) AS active FROM app_api_keys WHERE team_id = \(teamId) AND bundle_id = \(bundleId) AND revoked_at IS NULL"
        }

        struct Row: PGRowDecodable {
            let active: Int64
            init(row: PGRow) throws(PGError) { active = try row.decode("active") }
        }
    }

    struct Insert: PGCommandStatement {
        let hash: [UInt8]
        let keyId: String
        let teamId: String
        let bundleId: String

        var query: PGQuery {
            "INSERT INTO app_api_keys (key_hash, key_id, team_id, bundle_id) VALUES (\(hash), \(keyId), \(teamId), \(bundleId))"
        }
    }

    /// The app's keys, revoked ones included, oldest first; times as RFC 3339 UTC seconds.
    struct List: PGStatement {
        typealias Row = APIKeyStore.Listed
        let teamId: String
        let bundleId: String

        var query: PGQuery {
            """
            SELECT key_id, team_id, bundle_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS created_at,
                to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS revoked_at
            FROM app_api_keys WHERE team_id = \(teamId) AND bundle_id = \(bundleId) ORDER BY app_api_keys.created_at, key_id
            """
        }
    }

    /// Revokes one unrevoked key by id; the result is 1 when it did, else 0.
    struct Revoke: PGAffectedRowsStatement {
        let teamId: String
        let bundleId: String
        let keyId: String

        var query: PGQuery {
            "UPDATE app_api_keys SET revoked_at = now() WHERE team_id = \(teamId) AND bundle_id = \(bundleId) AND key_id = \(keyId) AND revoked_at IS NULL"
        }
    }
}

extension APIKeyStore.Listed: PGRowDecodable {
    public init(row: PGRow) throws(PGError) {
        self.init(
            keyId: try row.decode("key_id"), teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id"),
            createdAt: try row.decode("created_at"), revokedAt: try row.decode("revoked_at"))
    }
}
