import AppleReceipts

/// Where the worker and `attest-worker receipt refresh` get their client for Apple's attestation-data
/// endpoint: one place, so both use the same settings.
public enum ReceiptRefreshFactory {
    /// The client the environment's settings configure; nil when no team has a DeviceCheck key (refresh is
    /// then off).
    public static func client(environment: [String: String]) throws -> (any ReceiptRefreshing)? {
        nil
    }
}
