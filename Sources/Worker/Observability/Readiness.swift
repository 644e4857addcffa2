import AttestCore
import Observability

/// The worker's readiness: what must hold, and every reason it may not, each with its `/readyz` text and
/// its label on `attest_readiness_unmet`; and the advisories `/readyz` adds without changing its status.
public enum Readiness {
    public typealias Conditions = ReadinessConditions<Condition, Reason, Advisory>

    /// In the order `/readyz` lists them.
    public enum Condition: String, ReadinessCondition {
        /// PostgreSQL answers and takes writes (``DatabaseHealth``).
        case postgres
        /// The schema is the one this build expects.
        case migrations
        /// The consumer and producer work.
        case broker

        public var name: String { rawValue }
    }

    public enum Reason: ReadinessReason {
        /// The component has not reported yet.
        case starting
        /// The worker is shutting down.
        case stopping
        /// The consumer reported this error (its ``KafkaClient/KafkaError/name``).
        case consumerError(String)
        /// The producer failed fatally with this error.
        case producerError(String)
        /// The probe cannot reach PostgreSQL.
        case unreachable
        /// The probe found transactions read-only (a standby, or `default_transaction_read_only`).
        case readOnly
        /// The probe's query failed otherwise (the error's summary).
        case probeFailed(String)
        /// A writer is retrying a transient failure (``PostgresClient/PGError/summary``, e.g.
        /// `read-only (25006)`).
        case writerRetrying(String)
        /// The database's schema is older than this build's migrations.
        case schemaBehind(applied: Int, bundled: Int)

        public var text: String {
            switch self {
            case .starting: "starting"
            case .stopping: "stopping"
            case .consumerError(let name): "consumer: \(name)"
            case .producerError(let name): "producer: \(name)"
            case .unreachable: "unreachable"
            case .readOnly: "read-only"
            case .probeFailed(let summary): "probe failed (\(summary))"
            case .writerRetrying(let summary): summary
            case .schemaBehind(let applied, let bundled): "schema at \(applied) of \(bundled): run attest-worker migrate"
            }
        }

        public var label: String {
            switch self {
            case .starting: "starting"
            case .stopping: "stopping"
            case .consumerError: "consumer_error"
            case .producerError: "producer_error"
            case .unreachable: "unreachable"
            case .readOnly: "read_only"
            case .probeFailed: "probe_failed"
            case .writerRetrying: "writer_retrying"
            case .schemaBehind: "schema_behind"
            }
        }
    }

    /// Notes for an operator about work beside the verdicts' path: jobs are still verified, so the status
    /// stays what the conditions say.
    public enum Advisory: ReadinessAdvisory, Equatable {
        /// Apple refused the team's DeviceCheck key (400/401/403): its receipt refreshes wait until then
        /// (``ReceiptRefresher``). Never the key, the token or Apple's body.
        case receiptRefreshRefused(team: String, status: Int, pausedUntil: Timestamp)

        public var key: String {
            switch self {
            case .receiptRefreshRefused(let team, _, _): "receipt-refresh:" + team
            }
        }

        public var text: String {
            switch self {
            case .receiptRefreshRefused(let team, let status, let until):
                "receipt refresh: team \(team) refused by Apple (\(status)), paused until \(until.rfc3339)"
            }
        }
    }
}
