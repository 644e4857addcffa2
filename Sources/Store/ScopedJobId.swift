import AttestCore
import AttestJobs

/// A jobId within its app: the key of `verdicts` (migration 0006). Each app names its own jobs, so two apps'
/// equal jobIds are two jobs; a job that names no valid pair is scoped to ``AppIdentity/none``. jobIds are
/// equal when their bytes are, as in the table (``ExactText``), not when Unicode calls them equivalent.
public struct ScopedJobId: Hashable, Sendable {
    public var app: AppIdentity
    public var jobId: String

    public init(app: AppIdentity, jobId: String) {
        self.app = app
        self.jobId = jobId
    }

    public static func == (a: Self, b: Self) -> Bool { a.app == b.app && ExactText.equal(a.jobId, b.jobId) }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(app)
        ExactText.hash(jobId, into: &hasher)
    }
}
