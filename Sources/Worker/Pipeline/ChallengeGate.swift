import AttestCore
import AttestJobs
import AttestVerifier
import KafkaClient
import PostgresClient
import Store

/// The state the challenge step of the check list (``JobVerifier/check(_:_:)``, CONTRACT 7) reads: after the
/// receivedAt bounds and the app registration, before any object check. Only apps registered with
/// `--challenges worker` take part; for the others the verifier's binding rule is all there is.
extension BatchProcessor {
    /// The claims `entries` make, in rounds the store settles one after the other, each claim with its job's
    /// position in the batch: a job claims when it presents a challenge to an app whose challenges the worker
    /// issues and passes the checks before the challenge step (the front of the one check list), whatever
    /// its verdict will be, so the first job to present a challenge consumes it. One claim per jobId of an
    /// app (its first message); claims are settled by jobId, which is unique only within an app, so a round
    /// holds each jobId once and the same jobId of other apps goes in a further round (rare). The first round
    /// travels with the batch's gather.
    func challengeClaims(_ entries: [JobEntry], now: Timestamp) -> [[(position: Int, claim: ChallengeClaim)]] {
        var claiming = Set<ScopedJobId>()
        var pending = [(position: Int, claim: ChallengeClaim)]()
        for entry in entries {
            guard let job = entry.job, let app = entry.policy, app.challenges == .worker,
                let bytes = job.challenge.flatMap(Base64.decode), claiming.insert(entry.scopedJobId).inserted,
                verifier.reachesChallenge(
                    job, JobCheckInputs(now: now, brokerTimestampMs: entry.message.timestampMs, app: Self.rules(app, challenge: nil)))
            else { continue }
            pending.append(
                (entry.position, ChallengeClaim(
                    jobId: job.jobId, teamId: job.teamId, bundleId: job.bundleId, challenge: bytes, receivedAt: job.receivedAt,
                    skewSeconds: verifier.timeBounds.maxFutureSkewSeconds)))
        }
        var rounds = [[(position: Int, claim: ChallengeClaim)]]()
        while !pending.isEmpty {
            var jobIds = Set<String>()
            var round = [(position: Int, claim: ChallengeClaim)]()
            var later = [(position: Int, claim: ChallengeClaim)]()
            for claim in pending {
                if jobIds.insert(claim.claim.jobId).inserted { round.append(claim) } else { later.append(claim) }
            }
            rounds.append(round)
            pending = later
        }
        return rounds
    }

    /// Why the store did not let a job consume its worker-issued challenge, or nil when it did.
    static func refusal(_ outcome: ChallengeOutcome?) -> VerificationFailure? {
        switch outcome {
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
