import AttestJobs
import DeviceIntelligence

/// What a decision writes besides its verdict and device: the month's count, the device's risk history
/// and score. Applied only when the verdict itself is newly stored, so redelivery never counts twice.
public struct IntelligenceChange: Sendable {
    public var device: AppDevice
    public var month: String
    public var event: DeviceEvent
    public var deviceId: String
    public var assessment: RiskAssessment
    /// The decision records an event or moves the score or factors: its `device_risk` row must be written.
    /// False for most accepted assertions, which leave the row as it is (its `updated_at` included).
    public var writesRisk: Bool
    /// An accepted verdict of a device not counted before this batch: it counts the device (once, by
    /// insert-if-absent) in the month of the job's receivedAt. The worker marks only the device's first
    /// accepted decision in the batch; of several marked, the first stored counts it.
    public var countsAsActive: Bool
    public var keyId: [UInt8]?

    public init(
        device: AppDevice, month: String, event: DeviceEvent, deviceId: String, assessment: RiskAssessment, writesRisk: Bool,
        countsAsActive: Bool, keyId: [UInt8]?
    ) {
        self.device = device
        self.month = month
        self.event = event
        self.deviceId = deviceId
        self.assessment = assessment
        self.writesRisk = writesRisk
        self.countsAsActive = countsAsActive
        self.keyId = keyId
    }

    /// For verdict tokens, which carry the category.
    public var riskCategory: RiskCategory { assessment.category }
}
