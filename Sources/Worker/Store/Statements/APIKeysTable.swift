import AttestJobs
import PostgresClient

/// The SQL of `app_api_keys` (see ``APIKeyStore``).
enum APIKeysTable {
    /// The app's unrevoked key hashes, at most `limit`.
    struct ActiveHashes: PGStatement {
        static let sql = "SELECT key_hash FROM app_api_keys WHERE team_id = $1 AND bundle_id = $2 AND revoked_at IS NULL LIMIT $3"
        let parameters: [PGValue]

        init(teamId: String, bundleId: String, limit: Int) {
            parameters = [.text(teamId), .text(bundleId), .int(Int64(limit))]
        }

        struct Row: PGRowDecodable {
            let keyHash: [UInt8]
            init(row: PGRow) throws(PGError) { keyHash = try row.decode("key_hash") }
        }
    }

    /// The app an unrevoked key belongs to; no row for a key that is not one (or is revoked).
    struct Owner: PGOptionalRowStatement {
        static let sql = "SELECT team_id, bundle_id FROM app_api_keys WHERE key_hash = $1 AND revoked_at IS NULL"
        let parameters: [PGValue]

        init(hash: [UInt8]) { parameters = [.bytes(hash)] }

        struct Row: PGRowDecodable {
            let app: AppIdentity
            init(row: PGRow) throws(PGError) { app = AppIdentity(teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id")) }
        }
    }

    /// Locks the app's row while its keys are counted (so two adds cannot pass the limit); no row when the
    /// app is not registered.
    struct LockApp: PGOptionalRowStatement {
        static let sql = "SELECT 1 FROM apps WHERE team_id = $1 AND bundle_id = $2 FOR UPDATE"
        typealias Row = PGNoRow
        let parameters: [PGValue]

        init(teamId: String, bundleId: String) { parameters = [.text(teamId), .text(bundleId)] }
    }

    /// How many unrevoked keys the app has.
    struct CountActive: PGOneRowStatement {
        static let sql = "SELECT count(*) AS active FROM app_api_keys WHERE team_id = $1 AND bundle_id = $2 AND revoked_at IS NULL"
        let parameters: [PGValue]

        init(teamId: String, bundleId: String) { parameters = [.text(teamId), .text(bundleId)] }

        struct Row: PGRowDecodable {
            let active: Int64
            init(row: PGRow) throws(PGError) { active = try row.decode("active") }
        }
    }

    struct Insert: PGCommandStatement {
        static let sql = "INSERT INTO app_api_keys (key_hash, key_id, team_id, bundle_id) VALUES ($1, $2, $3, $4)"
        let parameters: [PGValue]

        init(hash: [UInt8], keyId: String, teamId: String, bundleId: String) {
            parameters = [.bytes(hash), .text(keyId), .text(teamId), .text(bundleId)]
        }
    }

    /// The app's keys, revoked ones included, oldest first; times as RFC 3339 UTC seconds.
    struct List: PGStatement {
        static let sql = """
            SELECT key_id, team_id, bundle_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS created_at,
                to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS revoked_at
            FROM app_api_keys WHERE team_id = $1 AND bundle_id = $2 ORDER BY app_api_keys.created_at, key_id
            """
        typealias Row = APIKeyStore.Listed
        let parameters: [PGValue]

        init(teamId: String, bundleId: String) { parameters = [.text(teamId), .text(bundleId)] }
    }

    /// Revokes one unrevoked key by id; the result is 1 when it did, else 0.
    struct Revoke: PGAffectedRowsStatement {
        static let sql =
            "UPDATE app_api_keys SET revoked_at = now() WHERE team_id = $1 AND bundle_id = $2 AND key_id = $3 AND revoked_at IS NULL"
        let parameters: [PGValue]

        init(teamId: String, bundleId: String, keyId: String) { parameters = [.text(teamId), .text(bundleId), .text(keyId)] }
    }
}

extension APIKeyStore.Listed: PGRowDecodable {
    public init(row: PGRow) throws(PGError) {
        self.init(
            keyId: try row.decode("key_id"), teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id"),
            createdAt: try row.decode("created_at"), revokedAt: try row.decode("revoked_at"))
    }
}
