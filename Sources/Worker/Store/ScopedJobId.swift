import AttestJobs

/// A jobId within its app: the key of `verdicts` (migration 0006). Each app names its own jobs, so two apps'
/// equal jobIds are two jobs; a job that names no valid pair is scoped to ``AppIdentity/none``.
public struct ScopedJobId: Hashable, Sendable {
    public var app: AppIdentity
    public var jobId: String

    public init(app: AppIdentity, jobId: String) {
        self.app = app
        self.jobId = jobId
    }
}
