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

/// Classifies consumed records in order: size, JSON object, usable jobId, then the job's fields. Pure (no
/// clock, no store) and linear in the record's size, so the worker and the fuzz target run the same checks.
public struct RecordClassifier: Sendable {
    /// ATTEST_MAX_MESSAGE_BYTES: a longer value is not a job, whatever the consumer kept of it.
    public var maxMessageBytes: Int
    /// The jobId is the verdict's primary key: it must be storable (no NUL, bounded length).
    public static let maxJobIdBytes = 256

    public init(maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
    }

    public func classify(_ record: KafkaMessage) -> RecordClass {
        guard record.valueBytes <= maxMessageBytes, record.valueSha256 == nil else {
            let text = "message over \(maxMessageBytes) bytes"
            let failure = VerificationFailure(.jobInvalid, .messageTooLarge, "the message is over \(maxMessageBytes) bytes")
            return .deadLetter(Self.answering(record, DeadLetter.Reason.tooLarge, text, failure))
        }
        guard let json = JSONValue.parse(record.value) else {
            let failure = VerificationFailure(.jobInvalid, .malformedJSON, "the message is not valid JSON")
            return .deadLetter(Self.answering(record, .jobInvalid, "not a JSON object", failure))
        }
        guard case .object = json else {
            return .deadLetter(DeadLetter(reason: .jobInvalid, message: "not a JSON object"))
        }
        guard case .string(let jobId)? = json["jobId"], Self.usable(jobId) else {
            return .deadLetter(
                DeadLetter(reason: .jobInvalid, message: "no usable jobId (a string of 1 to \(Self.maxJobIdBytes) bytes)"))
        }
        switch Job.parse(json) {
        case .success(let job): return .job(job)
        case .failure(let invalid):
            var app = AppIdentity.none
            if case .string(let team)? = json["teamId"], case .string(let bundle)? = json["bundleId"],
                let named = AppIdentity(validating: team, bundle)
            {
                app = named
            }
            return .invalidJob(jobId: jobId, app: app, invalid.failure)
        }
    }

    /// A jobId a verdict can be stored and keyed under: 1 to ``maxJobIdBytes`` bytes, no NUL.
    static func usable(_ jobId: String) -> Bool {
        !jobId.isEmpty && jobId.utf8.count <= maxJobIdBytes && !jobId.utf8.contains(0)
    }

    /// The dead letter of a record that is no job, answered with `failure` when a bounded scan of what the
    /// consumer kept of it finds a usable jobId (``JobFieldScan``).
    static func answering(
        _ record: KafkaMessage, _ reason: DeadLetter.Reason, _ text: String, _ failure: VerificationFailure
    ) -> DeadLetter {
        let fields = JobFieldScan(record.value)
        guard let jobId = fields.jobId, usable(jobId) else { return DeadLetter(reason: reason, message: text) }
        return DeadLetter(reason: reason, message: text, answering: fields, with: failure)
    }
}
