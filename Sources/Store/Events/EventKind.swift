/// What an event on the events topic reports (CONTRACT: the events topic). The raw value is the event's
/// `kind` member and the outbox's `kind` column.
public enum EventKind: String, Sendable, CaseIterable {
    /// An app's month reached 80% of its MAD limit.
    case quotaWarning = "mad.quota_warning"
    /// An app's month reached its MAD limit.
    case quotaReached = "mad.quota_reached"
    /// The limit being reached starts the grace period, in which new devices are still counted.
    case graceStarted = "mad.grace_started"
    /// The grace period passed: new devices of that month are turned away from now on.
    case graceEnded = "mad.grace_ended"
    /// A device's risk category changed (trusted, suspicious, blocked).
    case riskCategoryChanged = "device.risk_category_changed"
    /// An operator revoked a device.
    case deviceRevoked = "device.revoked"
}
