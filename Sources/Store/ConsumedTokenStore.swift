import AttestJobs
import PostgresClient
import Synchronization

/// The ledger of spent limited-use tokens (`consumed_tokens`, migration 0014), over a connection of its own
/// so a consumption never waits behind the pipeline's batches. One statement decides each consumption, so
/// it is atomic across every worker: of any number of concurrent consumers of one token, exactly one gets
/// ``Outcome/consumed``.
///
/// A row is kept until its token's exp plus the skew allowance, the window in which the verifier still
/// accepts the token; past it the token is refused as expired before the ledger is asked. The purge waits
/// ``purgeMarginSeconds`` more, the statement timeout of this connection: a consumption that found the
/// token live cannot still be running when its row is deleted, so it can never insert the row again.
public final class ConsumedTokenStore: Sendable {
    /// What the ledger says of one consumption.
    public enum Outcome: String, Sendable {
        /// This call spent the token.
        case consumed
        /// An earlier call did.
        case alreadyConsumed = "already_consumed"
        /// Past exp plus the skew by the database's clock (the worker's clock accepted it): never spent.
        case expired
    }

    /// Bounds every consumption statement, and so the margin the purge leaves after the skew.
    public static let purgeMarginSeconds: Int64 = 10

    private let connection: Mutex<PGReconnectingConnection>

    /// - Parameter retrySeconds: how long one consumption keeps retrying a lost connection. A consumption
    ///   committed whose answer was lost reads as already consumed when retried: it fails closed.
    public init(conninfo: String, retrySeconds: Int = 2) {
        connection = Mutex(
            PGReconnectingConnection(
                conninfo: conninfo, applicationName: "attest-worker-tokens", connectTimeoutSeconds: retrySeconds,
                settings: ["statement_timeout": "\(Self.purgeMarginSeconds * 1000)"], retryTimeout: .seconds(retrySeconds)))
    }

    /// Spends the token `jti` of `app`, live until `expiresAt` (its exp, Unix seconds) plus `skewSeconds`.
    public func consume(app: AppIdentity, jti: String, expiresAt: Int64, skewSeconds: Int64) throws(PGError) -> Outcome {
        try connection.withLock { connection throws(PGError) in
            try connection.run { c throws(PGError) in
                try c.execute(
                    ConsumedTokensTable.Consume(
                        teamId: app.teamId, bundleId: app.bundleId, jti: jti, expiresAt: expiresAt, skewSeconds: skewSeconds)
                ).outcome
            }
        }
    }
}

extension AttestStore {
    /// Deletes the consumed tokens whose exp is more than `skewSeconds` plus
    /// ``ConsumedTokenStore/purgeMarginSeconds`` past, `chunk` rows per statement; returns how many.
    public func purgeConsumedTokens(skewSeconds: Int64, chunk: Int = 10_000) throws(PGError) -> Int {
        let retain = skewSeconds + ConsumedTokenStore.purgeMarginSeconds
        return try purgeInChunks(chunk) { c, limit throws(PGError) in
            try c.execute(ConsumedTokensTable.Purge(retainSeconds: retain, limit: limit))
        }
    }
}
