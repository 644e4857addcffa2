import AttestCore
import AttestVerifier

/// One device's receipt to exchange at Apple's attestation-data endpoint for a fresh one.
public struct ReceiptRefreshRequest: Sendable, Equatable {
    public var teamId: String
    public var bundleId: String
    /// Which of Apple's endpoints serves the device (its key was attested there).
    public var environment: AppAttestEnvironment
    /// The receipt stored for the device (DER CMS), the one Apple refreshes.
    public var receipt: [UInt8]
    /// The device key's X9.62 point: a refreshed receipt must name it, as the attestation's did.
    public var attestedKey: [UInt8]

    public init(teamId: String, bundleId: String, environment: AppAttestEnvironment, receipt: [UInt8], attestedKey: [UInt8]) {
        self.teamId = teamId
        self.bundleId = bundleId
        self.environment = environment
        self.receipt = receipt
        self.attestedKey = attestedKey
    }
}

/// A refreshed receipt that verified as type RECEIPT for the device's app and key, with the fields the
/// scheduler and the risk model read.
public struct RefreshedReceipt: Sendable, Equatable {
    public var der: [UInt8]
    /// Field 17: Apple's approximate count of attestations of the app on the device over 30 days.
    public var riskMetric: Int?
    /// Field 12.
    public var creationTime: Timestamp
    /// Field 19: before it, Apple answers a refresh with 304.
    public var notBefore: Timestamp?
    /// Field 21.
    public var expirationTime: Timestamp?

    public init(der: [UInt8], riskMetric: Int?, creationTime: Timestamp, notBefore: Timestamp?, expirationTime: Timestamp?) {
        self.der = der
        self.riskMetric = riskMetric
        self.creationTime = creationTime
        self.notBefore = notBefore
        self.expirationTime = expirationTime
    }
}

/// What one refresh came to, classified for the scheduler: only `.refreshed` is stored.
public enum ReceiptRefreshOutcome: Sendable, Equatable {
    /// 200 with a receipt that verified.
    case refreshed(RefreshedReceipt)
    /// 304: the stored receipt is still the current one.
    case notModified
    /// 404: Apple holds no data for the device (older than about 30 days); keep the last receipt, retry on a
    /// long schedule (a new attestation can bring the data back).
    case noData
    /// 429, 5xx or a transport failure: back off, at least `retryAfter` when Apple gave one.
    case retryLater(retryAfter: Duration?, reason: String)
    /// 400, 401, 403: the team's key or the request is wrong; surfaced, never retried hot.
    case misconfigured(status: Int, reason: String)
    /// 200 with a body that is not a valid RECEIPT for this device: never stored.
    case rejected(reason: String)
}

/// Exchanges receipts with Apple (or the tests' stand-in). Blocking: called from the refresher's own
/// threads, never from a job's path.
public protocol ReceiptRefreshing: Sendable {
    /// Whether a DeviceCheck key is configured for the team; without one its devices are not refreshed.
    func isConfigured(teamId: String) -> Bool
    func refresh(_ request: ReceiptRefreshRequest, now: Timestamp) -> ReceiptRefreshOutcome
}
