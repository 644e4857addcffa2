import Foundation
import Observability
import PostgresClient

/// Keeps the `postgres` readiness condition current while the worker is idle: a batch only finds out that
/// PostgreSQL is gone when it next writes, and an idle worker writes nothing, so /readyz would go on
/// answering 200. Every `interval` it asks, on a connection of its own (never the batches'), whether its
/// transactions would be read-only (a standby, or `default_transaction_read_only` set), with a short
/// connect timeout so a vanished host does not hold the probe for the kernel's TCP timeout. A writer's
/// failure outranks what the probe finds (``DatabaseHealth``).
public final class DatabaseProbe: Sendable {
    private let conninfo: String
    private let health: DatabaseHealth
    private let interval: TimeInterval

    public init(conninfo: String, health: DatabaseHealth, interval: TimeInterval = 2) {
        self.conninfo = conninfo
        self.health = health
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
                    health.probed(try connection!.execute(ReadOnlySetting()).readOnly ? "read-only" : nil)
                } catch {
                    connection = nil
                    health.probed(error.isConnectionLost ? "unreachable" : "probe failed (\(error.summary))")
                }
                Thread.sleep(forTimeInterval: interval)
            }
        }
    }
}

/// Whether this session's transactions would be read-only: what the probe asks.
struct ReadOnlySetting: PGOneRowStatement {
    static let sql = "SELECT current_setting('transaction_read_only') AS read_only"

    struct Row: PGRowDecodable {
        let readOnly: Bool
        /// The setting prints `on` or `off`.
        init(row: PGRow) throws(PGError) { readOnly = (try row.decode("read_only") as String) == "on" }
    }
}
