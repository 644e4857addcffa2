import AttestCore
import AttestVerifier
import KafkaRecords

/// What a consumed record is, decided from its bytes alone: not a job (a dead letter, answered by a verdict
/// as well when its jobId could still be read: ``DeadLetter/answer``), a job
/// whose fields cannot be used (a job_invalid verdict under its jobId, scoped by the app it names when that
/// pair is valid, else by ``AppIdentity/none``), or a job to decide.
public enum RecordClass: Sendable {
    case deadLetter(DeadLetter)
    case invalidJob(jobId: String, app: AppIdentity, VerificationFailure)
    case job(Job)
}

/// Why a value is not a job: the dead letter's reason and text, and the job_invalid rejection that answers
/// it wherever it is answered (the worker: only when too large or not JSON and a jobId can still be read;
/// the offline `verify`: every such line). One value for both paths, so their codes cannot drift.
public struct NotAJob: Error, Sendable {
    public let reason: DeadLetter.Reason
    public let message: String
    public let failure: VerificationFailure
    /// The value's bytes may still name a jobId (``JobFieldScan``): too large or not JSON. A parsed value
    /// whose jobId is unusable names none.
    public let scannable: Bool

    /// The identifying members of `value` when it is ``scannable`` and names a usable jobId.
    public func answerFields(in value: [UInt8]) -> JobFieldScan? {
        guard scannable else { return nil }
        let fields = JobFieldScan(value)
        guard let jobId = fields.jobId, RecordClassifier.usable(jobId) else { return nil }
        return fields
    }
}

/// Classifies a value (a consumed record's, or a `verify` line) in order: size, JSON object, usable jobId,
/// then the job's fields. Pure (no clock, no store) and linear in the value's size, so the worker, the
/// offline `verify` and the fuzz target run the same checks.
public struct RecordClassifier: Sendable {
    /// ATTEST_MAX_MESSAGE_BYTES: a longer value is not a job, whatever the consumer kept of it.
    public var maxMessageBytes: Int
    /// ATTEST_MAX_MESSAGE_BYTES' default (CONTRACT 7: messages up to 256 KiB), the offline `verify`'s limit.
    public static let defaultMaxMessageBytes = 256 * 1024
    /// The jobId is the verdict's primary key: it must be storable (no NUL, bounded length).
    public static let maxJobIdBytes = 256

    public init(maxMessageBytes: Int = Self.defaultMaxMessageBytes) {
        self.maxMessageBytes = maxMessageBytes
    }

    /// A record: what is not a job is its dead letter, answered when ``NotAJob/answerFields(in:)`` finds a jobId.
    public func classify(_ record: KafkaMessage) -> RecordClass {
        switch classify(value: record.value, bytes: record.valueBytes, cut: record.valueSha256 != nil) {
        case .failure(let notAJob):
            guard let fields = notAJob.answerFields(in: record.value) else {
                return .deadLetter(DeadLetter(reason: notAJob.reason, message: notAJob.message))
            }
            return .deadLetter(
                DeadLetter(reason: notAJob.reason, message: notAJob.message, answering: fields, with: notAJob.failure))
        case .success(.invalidJob(let jobId, let app, let failure)): return .invalidJob(jobId: jobId, app: app, failure)
        case .success(.job(let job)): return .job(job)
        }
    }

    /// What a value is that is read as a job; its failure when it is none.
    public enum Readable: Sendable {
        case invalidJob(jobId: String, app: AppIdentity, VerificationFailure)
        /// A job of either platform (an Android one of its package's own app: ``Job/init(android:)``).
        case job(Job)
    }

    /// The checks on a value of `bytes` bytes, of which `value` is what was kept (`cut`: a prefix).
    public func classify(value: [UInt8], bytes: Int, cut: Bool = false) -> Result<Readable, NotAJob> {
        guard bytes <= maxMessageBytes, !cut else {
            return .failure(
                NotAJob(
                    reason: .tooLarge, message: "message over \(maxMessageBytes) bytes",
                    failure: VerificationFailure(.jobInvalid, .messageTooLarge, "the message is over \(maxMessageBytes) bytes"),
                    scannable: true))
        }
        guard let json = JSONValue.parse(value) else {
            return .failure(
                NotAJob(
                    reason: .jobInvalid, message: "not a JSON object",
                    failure: VerificationFailure(.jobInvalid, .malformedJSON, "the message is not valid JSON"), scannable: true))
        }
        guard case .object = json else {
            let text = "not a JSON object"
            return .failure(
                NotAJob(reason: .jobInvalid, message: text, failure: VerificationFailure(.jobInvalid, .invalidField, text), scannable: false))
        }
        guard case .string(let jobId)? = json["jobId"], Self.usable(jobId) else {
            let text = "no usable jobId (a string of 1 to \(Self.maxJobIdBytes) bytes)"
            let reason: FailureReason = json["jobId"] == nil ? .missingField : .invalidField
            return .failure(
                NotAJob(reason: .jobInvalid, message: text, failure: VerificationFailure(.jobInvalid, reason, text), scannable: false))
        }
        if case .string(let kind)? = json["kind"], kind == Job.Kind.androidAttestation.rawValue || kind == Job.Kind.androidAssertion.rawValue {
            switch AndroidJob.parse(json) {
            case .success(let job): return .success(.job(Job(android: job)))
            case .failure(let invalid): return .success(.invalidJob(jobId: jobId, app: .none, invalid.failure))
            }
        }
        switch Job.parse(json) {
        case .success(let job): return .success(.job(job))
        case .failure(let invalid):
            var app = AppIdentity.none
            if case .string(let team)? = json["teamId"], case .string(let bundle)? = json["bundleId"],
                let named = AppIdentity(validating: team, bundle), !named.isAndroidOnly
            {
                app = named
            }
            return .success(.invalidJob(jobId: jobId, app: app, invalid.failure))
        }
    }

    /// A jobId a verdict can be stored and keyed under: 1 to ``maxJobIdBytes`` bytes, no NUL.
    static func usable(_ jobId: String) -> Bool {
        !jobId.isEmpty && jobId.utf8.count <= maxJobIdBytes && !ExactText.containsNUL(jobId)
    }
}
