import AttestCore
import AttestJobs
import AttestVerifier
import Store

/// The app registrations a processor decides with, as last read, and the apps Android packages belong to.
struct RegisteredApps: Sendable {
    var policies: [AppIdentity: AppPolicy] = [:]
    /// Each registered Android package's app: its App ID's pair, or ("android", package) for an app
    /// registered by its package alone.
    var packages: [String: AppIdentity] = [:]
    /// When they were read; nil: never.
    var loadedAt: Timestamp? = nil

    init() {}

    init(_ policies: [AppIdentity: AppPolicy], loadedAt: Timestamp) {
        self.policies = policies
        for policy in policies.values {
            if let android = policy.android { packages[android.packageName] = policy.app }
        }
        self.loadedAt = loadedAt
    }

    /// The app `job` belongs to: an Android job's package's registration (its own pair when unregistered);
    /// any other job's own pair.
    func app(of job: Job) -> AppIdentity {
        guard let android = job.android else { return job.app }
        return packages[android.packageName] ?? AppIdentity(androidPackage: android.packageName)
    }
}
