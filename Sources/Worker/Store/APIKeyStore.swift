import AttestCore
import AttestCrypto
import PostgresClient

/// Per-app API keys for challenge issuance (migration 0008). A key is 32 random bytes, shown once as
/// `ak_` + base64url; the database keeps only its SHA-256, so a leaked table issues nothing.
public enum APIKeyStore {
    /// An app holds at most this many unrevoked keys (room for a rotation or two), which also bounds the
    /// work of checking one request.
    public static let maxActiveKeysPerApp = 8
    static let prefix = "ak_"

    /// A key as `app key list` shows it: never the key, never its hash.
    public struct Listed: Sendable, Equatable {
        public let keyId: String
        public let teamId: String
        public let bundleId: String
        public let createdAt: String
        public let revokedAt: String?
    }

    public enum AddError: Error, Sendable {
        case unknownApp
        case tooManyKeys
        case randomUnavailable(SecureRandom.Failure)
        case database(PGError)
    }

    /// The SHA-256 under which a presented key is stored.
    public static func hash(_ key: String) -> [UInt8] { Digest.sha256.hash(Array(key.utf8)) }

    static func keyId(_ hash: [UInt8]) -> String { String(Hex.encode(hash).prefix(16)) }

    /// The app's unrevoked key hashes.
    static func activeHashes(teamId: String, bundleId: String, on c: PGConnection) throws(PGError) -> [[UInt8]] {
        let rows = try c.execute(
            "SELECT key_hash FROM app_api_keys WHERE team_id = $1 AND bundle_id = $2 AND revoked_at IS NULL LIMIT $3",
            [.text(teamId), .text(bundleId), .int(Int64(maxActiveKeysPerApp))])
        return (0..<rows.count).compactMap { rows.bytes($0, 0) }
    }
}

extension AttestStore {
    /// Creates a key for a registered app and returns it with its id; the key is not stored and cannot be
    /// shown again. The app row is locked while its keys are counted, so two adds cannot pass the limit.
    public func addAPIKey(teamId: String, bundleId: String) throws(APIKeyStore.AddError) -> (key: String, keyId: String) {
        let key: String
        do { key = APIKeyStore.prefix + Base64.encodeURL(try SecureRandom.bytes(32)) } catch { throw .randomUnavailable(error) }
        let hash = APIKeyStore.hash(key)
        let outcome: String
        do {
            outcome = try connection.run { c throws(PGError) in
                try c.transaction { c throws(PGError) in
                    let app = try c.execute(
                        "SELECT 1 FROM apps WHERE team_id = $1 AND bundle_id = $2 FOR UPDATE", [.text(teamId), .text(bundleId)])
                    guard app.count == 1 else { return "unknown" }
                    let active = try c.execute(
                        "SELECT count(*) FROM app_api_keys WHERE team_id = $1 AND bundle_id = $2 AND revoked_at IS NULL",
                        [.text(teamId), .text(bundleId)])
                    guard (active.int(0, 0) ?? 0) < Int64(APIKeyStore.maxActiveKeysPerApp) else { return "full" }
                    try c.execute(
                        "INSERT INTO app_api_keys (key_hash, key_id, team_id, bundle_id) VALUES ($1, $2, $3, $4)",
                        [.bytes(hash), .text(APIKeyStore.keyId(hash)), .text(teamId), .text(bundleId)])
                    return "added"
                }
            }
        } catch {
            throw .database(error)
        }
        switch outcome {
        case "unknown": throw .unknownApp
        case "full": throw .tooManyKeys
        default: return (key, APIKeyStore.keyId(hash))
        }
    }

    /// The app's keys, revoked ones included, oldest first.
    public func apiKeys(teamId: String, bundleId: String) throws(PGError) -> [APIKeyStore.Listed] {
        let rows = try connection.run { c throws(PGError) in
            try c.execute(
                """
                SELECT key_id, team_id, bundle_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                    to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                FROM app_api_keys WHERE team_id = $1 AND bundle_id = $2 ORDER BY created_at, key_id
                """,
                [.text(teamId), .text(bundleId)])
        }
        return (0..<rows.count).map { r in
            APIKeyStore.Listed(
                keyId: rows.string(r, 0) ?? "", teamId: rows.string(r, 1) ?? "", bundleId: rows.string(r, 2) ?? "",
                createdAt: rows.string(r, 3) ?? "", revokedAt: rows.string(r, 4))
        }
    }

    /// Revokes one of the app's keys by id; false when the app has no unrevoked key with that id.
    public func revokeAPIKey(teamId: String, bundleId: String, keyId: String) throws(PGError) -> Bool {
        try connection.run { c throws(PGError) in
            try c.execute(
                "UPDATE app_api_keys SET revoked_at = now() WHERE team_id = $1 AND bundle_id = $2 AND key_id = $3 AND revoked_at IS NULL",
                [.text(teamId), .text(bundleId), .text(keyId)])
        }.affectedRows == 1
    }
}
