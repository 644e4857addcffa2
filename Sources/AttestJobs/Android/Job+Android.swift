import AttestCore

/// Android jobs travel the pipeline as ``Job``s, so one check list, one ledger and one store serve both
/// platforms; the app they belong to is found by their package name.
extension Job {
    /// An Android job in the pipeline's shape, of its package's own app until resolved.
    public init(android job: AndroidJob) {
        self.init(
            jobId: job.jobId, receivedAt: job.receivedAt, payload: .android(job, app: AppIdentity(androidPackage: job.packageName)),
            metadata: job.metadata)
        limitedUse = job.limitedUse
    }

    /// This Android job as a job of `app`, the registration its package belongs to; other jobs unchanged.
    public func resolvingAndroidApp(_ app: AppIdentity) -> Job {
        guard case .android(let job, _) = payload else { return self }
        var resolved = self
        resolved.payload = .android(job, app: app)
        return resolved
    }
}
