import Lifecycle
import Observability
import PostgresClient

/// Keeps the `postgres` readiness condition current while the worker is idle: a batch only finds out that
/// PostgreSQL is gone when it next writes, and an idle worker writes nothing, so /readyz would go on
/// answering 200. Every `interval` it asks, on a connection of its own (never the batches'), whether its
/// transactions would be read-only (a standby, or `default_transaction_read_only` set), with a short
/// connect timeout so a vanished host does not hold the probe for the kernel's TCP timeout. A writer's
/// failure outranks what the probe finds (``DatabaseHealth``). A component of the worker's group, stopped
/// with it.
public final class DatabaseProbe: Service {
    public let name = "database probe"
    private let task: PeriodicTask

    public init(conninfo: String, health: DatabaseHealth, interval: Duration = .seconds(2)) {
        let probe = Probe()
        task = PeriodicTask(name: "database-probe", every: interval) { probe.round(conninfo: conninfo, health: health) }
    }

    public func start(failed: @escaping @Sendable (any Error) -> Void) { task.start() }

    /// Waits for a probe in progress (at most its 2 s connect timeout and one query).
    public func stop(deadline: ContinuousClock.Instant) { task.stop() }

    /// One probe: reuses a healthy connection, else opens one.
    private final class Probe: @unchecked Sendable {
        /// Only the task's thread touches it.
        private var connection: PGConnection?

        func round(conninfo: String, health: DatabaseHealth) {
            do throws(PGError) {
                if connection?.isHealthy != true {
                    connection = try PGConnection(conninfo: conninfo, applicationName: "attest-worker-probe", connectTimeoutSeconds: 2)
                }
                health.probed(try connection!.execute(ReadOnlySetting()).readOnly ? .readOnly : nil)
            } catch {
                connection = nil
                health.probed(error.isConnectionLost ? .unreachable : .probeFailed(error.summary))
            }
        }
    }
}

/// Whether this session's transactions would be read-only: what the probe asks.
struct ReadOnlySetting: PGOneRowStatement {
    var query: PGQuery { "SELECT current_setting('transaction_read_only') AS read_only" }

    struct Row: PGRowDecodable {
        let readOnly: Bool
        /// The setting prints `on` or `off`.
        init(row: PGRow) throws(PGError) { readOnly = (try row.decode("read_only") as String) == "on" }
    }
}
