import AttestCore
import AttestCrypto
import PostgresClient

/// Per-app API keys for challenge issuance (migration 0008). A key is 32 random bytes, shown once as
/// `ak_` + base64url; the database keeps only its SHA-256, so a leaked table issues nothing.
public enum APIKeyStore {
    /// An app holds at most this many unrevoked keys (room for a rotation or two), which also bounds the
    /// work of checking one request.
    public static let maxActiveKeysPerApp = 8
    public static let prefix = "ak_"

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
        try c.execute(APIKeysTable.ActiveHashes(teamId: teamId, bundleId: bundleId, limit: maxActiveKeysPerApp)).map(\.keyHash)
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
                    guard try c.execute(APIKeysTable.LockApp(teamId: teamId, bundleId: bundleId)) != nil else { return "unknown" }
                    let active = try c.execute(APIKeysTable.CountActive(teamId: teamId, bundleId: bundleId)).active
                    guard active < Int64(APIKeyStore.maxActiveKeysPerApp) else { return "full" }
                    try c.execute(
                        APIKeysTable.Insert(hash: hash, keyId: APIKeyStore.keyId(hash), teamId: teamId, bundleId: bundleId))
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
        try connection.run { c throws(PGError) in try c.execute(APIKeysTable.List(teamId: teamId, bundleId: bundleId)) }
    }

    /// Revokes one of the app's keys by id; false when the app has no unrevoked key with that id.
    public func revokeAPIKey(teamId: String, bundleId: String, keyId: String) throws(PGError) -> Bool {
        try connection.run { c throws(PGError) in
            try c.execute(APIKeysTable.Revoke(teamId: teamId, bundleId: bundleId, keyId: keyId))
        } == 1
    }
}
