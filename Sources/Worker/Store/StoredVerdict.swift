/// A verdict already stored for a jobId, as a redelivery finds it.
public struct StoredVerdict: Sendable, Equatable {
    /// Exactly what was published; published again unchanged.
    public var json: String
    /// SHA-256 of the job message that was decided; nil for rows stored before it was recorded.
    public var jobDigest: [UInt8]?

    public init(json: String, jobDigest: [UInt8]?) {
        self.json = json
        self.jobDigest = jobDigest
    }
}
