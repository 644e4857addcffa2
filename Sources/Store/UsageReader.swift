import AttestJobs
import DeviceIntelligence
import PostgresClient
import Synchronization

/// The usage endpoint's reads, over a connection of its own (one caller at a time, retries bounded to
/// seconds) so a request never waits behind the pipeline's batches: the figures come from the same
/// statements the quota step and `attest-worker mad` read.
public final class UsageReader: Sendable {
    private let connection: Mutex<PGReconnectingConnection>

    public init(conninfo: String, retrySeconds: Int = 2) {
        connection = Mutex(
            PGReconnectingConnection(conninfo: conninfo, connectTimeoutSeconds: retrySeconds, retryTimeout: .seconds(retrySeconds)))
    }

    /// The app's usage in `month` ("YYYY-MM"); nil when the app is not registered.
    public func usage(of app: AppIdentity, month: String) throws(PGError) -> AppUsage? {
        try connection.withLock { connection throws(PGError) in
            try connection.run { c throws(PGError) -> AppUsage? in
                guard let policy = try c.execute(AppsTable.One(app)) else { return nil }
                let months = [AppMonth(teamId: app.teamId, bundleId: app.bundleId, month: month)]
                let quota = try c.execute(MonthlyCountsTable.Quotas(months))[0].quota
                return AppUsage(app: app, month: month, quota: quota, madLimit: policy.madLimit, graceDays: policy.graceDays)
            }
        }
    }

    /// The app whose unrevoked API key hashes to `hash`; nil for none.
    public func keyOwner(_ hash: [UInt8]) throws(PGError) -> AppIdentity? {
        try connection.withLock { connection throws(PGError) in
            try connection.run { c throws(PGError) in try c.execute(APIKeysTable.Owner(hash: hash))?.app }
        }
    }
}
