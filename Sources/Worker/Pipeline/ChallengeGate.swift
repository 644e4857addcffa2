import AttestCore
import AttestJobs
import AttestVerifier
import KafkaClient
import PostgresClient

/// The challenge step of the check order (CONTRACT 7): after the receivedAt bounds and the app registration,
/// before any object check. Only apps registered with `--challenges worker` take part; for the others the
/// verifier's binding rule is all there is.
extension BatchProcessor {
    /// Claims, in one round trip, the challenges of the jobs in `indices` that reach this step, and records
    /// each job's outcome. A job claims whatever its verdict will be: the first job to present a challenge
    /// consumes it.
    ///
    /// Claims are settled by jobId, which is unique only within an app: claims of other apps' jobs with the
    /// same jobId go in a further round trip (the batch holds one job per jobId of an app).
    func consumeChallenges(_ items: inout [Item], _ indices: [Int], now: Timestamp) throws(PGError) {
        var pending = [(item: Int, claim: ChallengeClaim)]()
        for i in indices {
            guard let job = items[i].job, verifier.checkReceivedAt(job, now: now, brokerTimestampMs: items[i].message.timestampMs) == nil,
                policy(for: job)?.challenges == .worker, let bytes = job.challenge.flatMap(Base64.decode)
            else { continue }
            pending.append(
                (i, ChallengeClaim(
                    jobId: job.jobId, teamId: job.teamId, bundleId: job.bundleId, challenge: bytes, receivedAt: job.receivedAt,
                    skewSeconds: verifier.timeBounds.maxFutureSkewSeconds)))
        }
        while !pending.isEmpty {
            var jobIds = Set<String>()
            var round = [(item: Int, claim: ChallengeClaim)]()
            var later = [(item: Int, claim: ChallengeClaim)]()
            for entry in pending {
                if jobIds.insert(entry.claim.jobId).inserted { round.append(entry) } else { later.append(entry) }
            }
            let outcomes = try store.consumeChallenges(round.map(\.claim))
            for (i, claim) in round { items[i].challenge = outcomes[claim.jobId] }
            pending = later
        }
    }

    /// Why a job of a worker-challenge app fails the challenge step, or nil when it consumed its challenge.
    func challengeFailure(_ item: Item, _ job: Job) -> VerificationFailure? {
        guard let challenge = job.challenge else {
            return VerificationFailure(.challengeInvalid, .missingField, "challenge is required: this app's challenges are issued by the worker")
        }
        guard Base64.decode(challenge) != nil else {
            return VerificationFailure(.challengeInvalid, .malformedBase64, "challenge is not base64")
        }
        switch item.challenge {
        case .consumed?:
            return nil
        case .unknown?, nil:
            return VerificationFailure(.challengeInvalid, .challengeUnknown, "challenge was not issued for this app")
        case .expired?:
            return VerificationFailure(.challengeExpired, .challengeExpired, "challenge had expired at receivedAt")
        case .notYetIssued?:
            // The code clients already handle by fetching a fresh challenge; the reason tells analytics apart.
            return VerificationFailure(.challengeExpired, .challengeNotYetIssued, "receivedAt is before the challenge was issued")
        case .alreadyUsed?:
            return VerificationFailure(.challengeAlreadyUsed, .challengeAlreadyUsed, "challenge was consumed by another job")
        }
    }
}
