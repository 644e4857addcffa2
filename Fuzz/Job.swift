import AttestCore
import AttestJobs

/// A message from the jobs topic: the strict JSON parser, the job's field validation (Apple's and
/// Android's), and the verdict JSON that echoes the job's fields (or the rejection of a message that is
/// not a job).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJob(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let json = JSONValue.parse(fuzzInput(data, size)) else { return 0 }
    let verdict: Verdict
    switch Job.parse(json) {
    case .success(let job):
        verdict = Verdict(job: job, verifiedAt: job.receivedAt)
    case .failure(let invalid):
        var rejection = Verdict(job: nil, verifiedAt: Timestamp(seconds: 0))
        rejection.jobId = invalid.jobId
        rejection.failure = invalid.failure
        verdict = rejection
    }
    _ = verdict.json.serialized()
    // The same value as an Android job, and its verdict.
    if case .success(let android) = AndroidJob.parse(json) {
        _ = Verdict(job: Job(android: android), verifiedAt: android.receivedAt).json.serialized()
    }
    return 0
}
