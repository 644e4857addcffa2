import AttestCore

/// The identifying members (jobId, teamId, bundleId, keyId) of a message that is not a readable job: over
/// the size limit (only a prefix was kept) or not valid JSON, so that its sender still gets a verdict
/// under its jobId instead of waiting blind.
///
/// The scan is ``JSONMemberScan``: linear, bounded, and a member named twice counts as absent.
public struct JobFieldScan: Sendable, Equatable {
    public var jobId: String?
    public var teamId: String?
    public var bundleId: String?
    public var keyId: String?

    /// Values longer than this are not echoed (a jobId must fit ``RecordClassifier/maxJobIdBytes`` anyway).
    public static let maxValueBytes = 256
    static let names: Set<String> = ["jobId", "teamId", "bundleId", "keyId"]

    public init(jobId: String? = nil, teamId: String? = nil, bundleId: String? = nil, keyId: String? = nil) {
        (self.jobId, self.teamId, self.bundleId, self.keyId) = (jobId, teamId, bundleId, keyId)
    }

    public init(_ bytes: [UInt8]) {
        let found = JSONMemberScan.strings(named: Self.names, in: bytes, maxValueBytes: Self.maxValueBytes)
        (jobId, teamId, bundleId, keyId) = (found["jobId"], found["teamId"], found["bundleId"], found["keyId"])
    }
}
