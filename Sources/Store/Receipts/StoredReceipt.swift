import AttestCore
import PostgresClient

/// What `attest-worker receipt show` prints: the device's stored receipt (DER, parsed by the command), its
/// refresh state and its latest metrics, oldest first. Times as RFC 3339 UTC seconds.
public struct StoredReceipt: Sendable {
    public var keyId: [UInt8]
    public var teamId: String
    public var bundleId: String
    public var environment: String
    public var receipt: [UInt8]?
    public var nextDueAt: String?
    public var attempts: Int?
    public var lastStatus: String?
    public var lastError: String?
    public var lastAttemptAt: String?
    public var refreshedAt: String?
    /// `[{"metric", "receiptCreatedAt", "storedAt"}]`.
    public var metrics: JSONValue
}

extension StoredReceipt: PGRowDecodable {
    public init(row: PGRow) throws(PGError) {
        self.init(
            keyId: try row.decode("key_id"), teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id"),
            environment: try row.decode("environment"), receipt: try row.decode("receipt"), nextDueAt: try row.decode("next_due_at"),
            attempts: try row.decode("attempts"), lastStatus: try row.decode("last_status"), lastError: try row.decode("last_error"),
            lastAttemptAt: try row.decode("last_attempt_at"), refreshedAt: try row.decode("refreshed_at"),
            metrics: try row.decodeJSON("metrics") { $0 } ?? .array([]))
    }
}
