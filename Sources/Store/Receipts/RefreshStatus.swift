/// How a device's last refresh try ended (`receipt_refresh.last_status`, and the outcome label of
/// `attest_receipt_refreshes_total`).
public enum RefreshStatus: String, Sendable, CaseIterable {
    /// Apple sent a new receipt and it verified: stored.
    case refreshed
    /// 304: the stored receipt is current.
    case notModified = "not_modified"
    /// 404: Apple holds no data for the device.
    case noData = "no_data"
    /// 429, 5xx or a transport failure: backing off.
    case retryLater = "retry_later"
    /// 400, 401, 403: the team's key was refused; the team is paused.
    case misconfigured
    /// Apple's answer was not a valid receipt for the device: not stored.
    case rejected
    /// The team's request budget was spent; tried again when a token is free.
    case rateLimited = "rate_limited"
    /// The stored receipt's not-before has not passed: Apple would answer 304.
    case waiting
    /// Not refreshed: the device was not seen recently, was revoked, or is gone.
    case idle
    /// No DeviceCheck key is configured for the team.
    case unconfigured
}
