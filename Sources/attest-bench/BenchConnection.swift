import Foundation
import PostgresClient

extension PGReconnectingConnection {
    /// The benchmark's own connection: transient failures are retried as the worker retries them, but each
    /// retry is said on stderr and a failure that lasts a minute ends the run with its error, where the
    /// worker's endless retry would leave a benchmark waiting in silence (a schema changed by hand that a
    /// migration then meets, a database that never comes back).
    static func bench(_ conninfo: String, settings: [String: String] = [:]) -> PGReconnectingConnection {
        PGReconnectingConnection(
            conninfo: conninfo, applicationName: "attest-bench", settings: settings, retryTimeout: .seconds(60),
            onRetry: { error, attempt, wait in
                FileHandle.standardError.write(Data("attest-bench: PostgreSQL: \(error.summary); retry \(attempt) in \(wait)\n".utf8))
            })
    }
}
