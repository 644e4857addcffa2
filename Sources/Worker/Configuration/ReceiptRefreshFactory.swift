import AppleReceipts
import AttestVerifier

/// Where the worker and `attest-worker receipt refresh` get their client for Apple's attestation-data
/// endpoint: one place, so both build it alike.
public enum ReceiptRefreshFactory {
    /// The client `settings` configure (``ReceiptRefreshSettings/from(environment:)``), verifying refreshed
    /// receipts under `receiptAnchor` (Apple Root CA - G3, or ATTEST_RECEIPT_TRUST_ANCHORS) and their
    /// freshness with `skewSeconds` of clock skew (ATTEST_MAX_FUTURE_SKEW); nil when no team has a
    /// DeviceCheck key: refresh is then off.
    public static func client(_ settings: ReceiptRefreshSettings?, receiptAnchor: TrustAnchor, skewSeconds: Int64) -> (any ReceiptRefreshing)? {
        settings.map { AttestationDataClient(settings: $0, receiptAnchor: receiptAnchor, skewSeconds: skewSeconds) }
    }
}
