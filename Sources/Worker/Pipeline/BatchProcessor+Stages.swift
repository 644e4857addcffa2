import AttestCore
import AttestCrypto
import AttestJobs
import AttestVerifier
import KafkaClient
import Store

/// The stages a consumed message moves through, each a type holding what the stage guarantees:
/// incoming (a ``KafkaMessage``) → ``BatchProcessor/Classified`` (a dead letter, or a job entry: an invalid
/// job or a job) → ``BatchProcessor/Decided`` (the batch's decisions) → stored (by ``BatchTransaction/settle(_:)``) →
/// published (an ``Outbound``).
extension BatchProcessor {
    /// A consumed message after classification.
    enum Classified: Sendable {
        /// Not a job: its dead letter is what the message publishes, with no verdict.
        case deadLetter(Outbound)
        /// A message with a usable jobId: decided once per app and answered by its verdict.
        case job(JobEntry)
    }

    /// A message with a usable jobId, valid or not. A class: the batch's stages pass each entry along,
    /// store it in their results and iterate over them, and each copy of the struct it was retained every
    /// field of its message and job (2.4% of the worker's samples in a `perf` profile of a throughput phase;
    /// `ops/bench-ab` measured no change beyond its spread); its fields never change.
    final class JobEntry: Sendable {
        /// What a job entry holds besides its jobId.
        enum Content: Sendable {
            /// The job_invalid failure of a job whose fields cannot be used.
            case invalid(VerificationFailure)
            /// A job whose fields are valid; `keyBytes` is its keyId when that decodes to 32 bytes.
            case job(Job, keyBytes: [UInt8]?)
        }

        /// The message's position in its batch, where its answer is published.
        let position: Int
        let message: KafkaMessage
        let jobId: String
        /// The app the jobId belongs to: the job's pair when its teamId and bundleId are valid (an Android
        /// job's: its package's app), else none.
        let scope: AppIdentity
        /// SHA-256 of the message: what tells a redelivery from a reused jobId.
        let digest: [UInt8]
        /// The content's parts as stored properties, not read out of the enum: a `let` of a final class is
        /// read in place, where each read of an enum's payload copied the whole job (a retain and a release
        /// of each of its fields) a dozen times per job.
        let job: Job?
        let keyBytes: [UInt8]?
        /// The job_invalid failure of an entry whose fields cannot be used.
        let invalidFailure: VerificationFailure?
        /// The policy of the job's app (``BatchProcessor/policy(for:in:)``), looked up once for the stages
        /// after, which each looked it up again (a lock, a hash of the app and a copy of its policy).
        let policy: AppPolicy?

        init(
            position: Int, message: KafkaMessage, jobId: String, scope: AppIdentity, digest: [UInt8], content: Content,
            policy: AppPolicy? = nil
        ) {
            self.position = position
            self.message = message
            self.jobId = jobId
            self.scope = scope
            self.digest = digest
            self.policy = policy
            switch content {
            case .invalid(let failure): (job, keyBytes, invalidFailure) = (nil, nil, failure)
            case .job(let job, let keyBytes): (self.job, self.keyBytes, invalidFailure) = (job, keyBytes, nil)
            }
        }

        /// The entry of a valid job under the app it belongs to in `apps` (an Android job's: the app its package
        /// is registered with), with that app's policy.
        static func job(
            _ job: Job, position: Int, message: KafkaMessage, digest: [UInt8], keyBytes: [UInt8]?, apps: RegisteredApps,
            policy: (Job) -> AppPolicy?
        ) -> JobEntry {
            let resolved = job.android == nil ? job : job.resolvingAndroidApp(apps.app(of: job))
            return JobEntry(
                position: position, message: message, jobId: resolved.jobId, scope: resolved.app, digest: digest,
                content: .job(resolved, keyBytes: keyBytes), policy: policy(resolved))
        }

        /// The same entry under `apps` as read again; an entry whose fields cannot be used stays.
        func resolvingApp(in apps: RegisteredApps, policy: (Job) -> AppPolicy?) -> JobEntry {
            guard let job else { return self }
            return .job(job, position: position, message: message, digest: digest, keyBytes: keyBytes, apps: apps, policy: policy)
        }

        var scopedJobId: ScopedJobId { ScopedJobId(app: scope, jobId: jobId) }
    }

    /// A job entry with its decision, ready to be stored.
    /// A batch's decisions, as arrays side by side rather than an array of pairs: the settle takes the
    /// decisions as they are, where a pair per job was copied apart (every field retained) to be stored.
    struct Decided: Sendable {
        /// The entries decided, in batch order.
        let entries: [JobEntry]
        /// Each entry's decision.
        let decisions: [Decision]
        /// Each entry's ``Settled/key``.
        let keys: [DeviceCache.DeviceKey?]
    }
}
