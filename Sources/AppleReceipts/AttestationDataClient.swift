import AttestCore
import AttestVerifier
import HTTPClient

/// Exchanges a device's receipt at Apple's attestation-data endpoint of its environment: POST the base64
/// receipt with the team's DeviceCheck JWT as `Authorization` (Apple's form: the token itself, no scheme),
/// then classify the answer (``AttestationDataAnswer``). Blocking, over libcurl (``HTTPClient``); safe to
/// call from several threads at once. Logs nothing: the caller logs the outcome, which never carries the
/// token, the key or a body.
public final class AttestationDataClient: ReceiptRefreshing {
    public let settings: ReceiptRefreshSettings
    private let verifier: ReceiptVerifier
    private let tokens: DeviceCheckTokens
    private let http: HTTPClient
    /// How far Apple's clock may run from ours (ATTEST_MAX_FUTURE_SKEW), in the freshness rules.
    private let skewSeconds: Int64

    public init(settings: ReceiptRefreshSettings, receiptAnchor: TrustAnchor, skewSeconds: Int64, clock: any Clock = SystemClock()) {
        self.settings = settings
        self.skewSeconds = skewSeconds
        verifier = ReceiptVerifier(anchor: receiptAnchor)
        tokens = DeviceCheckTokens(keys: settings.keys, clock: clock)
        http = HTTPClient(configuration: HTTPClient.Configuration(
            connectTimeout: settings.connectTimeout, requestTimeout: settings.requestTimeout,
            maxResponseBodyBytes: AttestationDataAnswer.maxBodyBytes, caFile: settings.caFile))
    }

    public func isConfigured(teamId: String) -> Bool { tokens.isConfigured(teamId: teamId) }

    public func refresh(_ request: ReceiptRefreshRequest, now: Timestamp) -> ReceiptRefreshOutcome {
        guard isConfigured(teamId: request.teamId) else {
            return .misconfigured(status: 0, reason: "no DeviceCheck key for team \(request.teamId)")
        }
        guard let token = tokens.token(teamId: request.teamId) else {
            return .misconfigured(status: 0, reason: "the DeviceCheck key of team \(request.teamId) did not sign")
        }
        let result = http.post(HTTPClientRequest(
            url: settings.url(for: request.environment), headers: [("Authorization", token)],
            body: Array(Base64.encode(request.receipt).utf8)))
        return AttestationDataAnswer.classify(result, request: request, verifier: verifier, now: now, skewSeconds: skewSeconds)
    }
}
