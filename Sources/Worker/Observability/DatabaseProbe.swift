import Foundation
import Observability
import PostgresClient

/// Keeps the `postgres` readiness condition current while the worker is idle: a batch only finds out that
/// PostgreSQL is gone when it next writes, and an idle worker writes nothing, so /readyz would go on
/// answering 200. Every `interval` it runs `SELECT 1` on a connection of its own (never the batches'), with
/// a short connect timeout so a vanished host does not hold the probe for the kernel's TCP timeout.
public final class DatabaseProbe: Sendable {
    private let conninfo: String
    private let readiness: ReadinessConditions
    private let interval: TimeInterval

    public init(conninfo: String, readiness: ReadinessConditions, interval: TimeInterval = 2) {
        self.conninfo = conninfo
        self.readiness = readiness
        self.interval = interval
    }

    /// Starts probing on a detached thread for the life of the process.
    public func start() {
        Thread.detachNewThread { [self] in
            var connection: PGConnection?
            while true {
                do throws(PGError) {
                    if connection?.isHealthy != true {
                        connection = try PGConnection(conninfo: conninfo, applicationName: "attest-worker-probe", connectTimeoutSeconds: 2)
                    }
                    try connection!.execute("SELECT 1")
                    readiness.markReady("postgres")
                } catch {
                    connection = nil
                    readiness.markNotReady("postgres", reason: error.isConnectionLost ? "unreachable" : "probe failed (\(error.sqlState ?? "error"))")
                }
                Thread.sleep(forTimeInterval: interval)
            }
        }
    }
}
