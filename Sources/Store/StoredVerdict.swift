/// A verdict already stored for a jobId of an app, as a redelivery finds it.
public struct StoredVerdict: Sendable, Equatable {
    /// Exactly what was published; published again unchanged.
    public var json: String
    /// SHA-256 of the job message that was decided; nil for rows stored before it was recorded.
    public var jobDigest: [UInt8]?

    public init(json: String, jobDigest: [UInt8]?) {
        self.json = json
        self.jobDigest = jobDigest
    }

    /// Whether the message with this digest is the one decided (rows from before 0004 have no digest and
    /// count as the same): only then is the stored verdict its answer.
    public func decided(digest: [UInt8]) -> Bool { jobDigest.map { $0 == digest } ?? true }
}
