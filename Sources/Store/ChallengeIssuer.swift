import AttestCrypto
import PostgresClient
import Synchronization

/// Issues challenges (32 bytes from `RAND_bytes`, stored for five minutes) over a connection of its own, so
/// issuance never waits behind the pipeline's batches; the issuance endpoint's key lookups and rate-limit
/// takes go over the same connection. One caller at a time uses the connection; an outage fails a request
/// within seconds instead of holding it.
public final class ChallengeIssuer: Sendable {
    /// Why a challenge could not be issued.
    public enum IssueError: Error, Sendable {
        /// The app is not registered (`attest-worker app add`).
        case unknownApp
        case randomUnavailable(SecureRandom.Failure)
        case database(PGError)
    }

    private let connection: Mutex<PGReconnectingConnection>

    /// - Parameter retrySeconds: how long one issuance keeps retrying a lost connection.
    public init(conninfo: String, retrySeconds: Int = 2) {
        connection = Mutex(
            PGReconnectingConnection(
                conninfo: conninfo, connectTimeoutSeconds: retrySeconds, retryTimeout: .seconds(retrySeconds)))
    }

    public func issue(teamId: String, bundleId: String) throws(IssueError) -> IssuedChallenge {
        let bytes: [UInt8]
        do { bytes = try SecureRandom.bytes(ChallengeStore.byteCount) } catch { throw .randomUnavailable(error) }
        let issued: IssuedChallenge?
        do {
            issued = try connection.withLock { connection throws(PGError) in
                try connection.run { c throws(PGError) in
                    try ChallengeStore.insert(bytes, teamId: teamId, bundleId: bundleId, on: c)
                }
            }
        } catch {
            throw .database(error)
        }
        guard let issued else { throw .unknownApp }
        return issued
    }

    /// The app's unrevoked API key hashes (``APIKeyStore``), for the caller to compare in constant time.
    public func activeKeyHashes(teamId: String, bundleId: String) throws(PGError) -> [[UInt8]] {
        try connection.withLock { connection throws(PGError) in
            try connection.run { c throws(PGError) in try APIKeyStore.activeHashes(teamId: teamId, bundleId: bundleId, on: c) }
        }
    }

    /// Takes a token from a shared rate bucket (``RateLimitStore``): nil when granted, else seconds to wait.
    public func take(_ bucket: String, _ limit: RateLimitStore.Limit) throws(PGError) -> Int? {
        try connection.withLock { connection throws(PGError) in
            try connection.run { c throws(PGError) in try RateLimitStore.take(bucket, limit, on: c) }
        }
    }
}
