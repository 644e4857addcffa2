import AttestCore
import AttestVerifier

extension JobVerifier {
    /// An Android job's checks in the contract's order (CONTRACT 9, CHECK_ORDER Android): receivedAt bounds,
    /// then the verifier's own checks at the job's receivedAt under `policy` (the app's registration, or the
    /// offline `verify`'s flags and the line's digests), the stored key an assertion is checked against
    /// given by the caller.
    public func check(_ job: AndroidJob, policy: AndroidPolicy, storedKey: AttestedAndroidKey?, now: Timestamp, brokerTimestampMs: Int64? = nil) -> Verdict {
        var verdict = Verdict(androidJob: job, verifiedAt: now)
        if let failure = checkReceivedAt(job.receivedAt, now: now, brokerTimestampMs: brokerTimestampMs) {
            verdict.failure = failure
            return verdict
        }
        verdict.verificationTime = job.receivedAt
        switch job.payload {
        case .attestation(let request):
            switch androidAttestations.verify(request, policy: policy, at: job.receivedAt) {
            case .failure(let failure): verdict.failure = failure
            case .success(let verified):
                verdict.keyId = verified.keyId
                verdict.publicKey = verified.subjectPublicKeyInfo
                verdict.android = verified
            }
        case .assertion(let request):
            verdict.failure = androidAssertions.verify(request, storedKey: storedKey)
        }
        return verdict
    }
}
