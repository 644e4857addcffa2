import AttestCore
import AttestJobs
import AttestVerifier
import KafkaClient
import PostgresClient

/// The state the challenge step of the check list (``JobVerifier/check(_:_:)``, CONTRACT 7) reads: after the
/// receivedAt bounds and the app registration, before any object check. Only apps registered with
/// `--challenges worker` take part; for the others the verifier's binding rule is all there is.
extension BatchProcessor {
    /// Claims, in one round trip, the challenges of the jobs among `entries` that pass the checks before the
    /// challenge step, and returns each claiming job's outcome by its position in the batch. A job claims
    /// whatever its verdict will be: the first job to present a challenge consumes it.
    ///
    /// Claims are settled by jobId, which is unique only within an app: claims of other apps' jobs with the
    /// same jobId go in a further round trip (the batch holds one job per jobId of an app).
    func consumeChallenges(_ entries: [JobEntry], now: Timestamp) throws(PGError) -> [Int: ChallengeOutcome] {
        var pending = [(position: Int, claim: ChallengeClaim)]()
        for entry in entries {
            guard let job = entry.job, let app = policy(for: job), app.challenges == .worker,
                let bytes = job.challenge.flatMap(Base64.decode),
                verifier.reachesChallenge(
                    job, JobCheckInputs(now: now, brokerTimestampMs: entry.message.timestampMs, app: Self.rules(app, challenge: nil)))
            else { continue }
            pending.append(
                (entry.position, ChallengeClaim(
                    jobId: job.jobId, teamId: job.teamId, bundleId: job.bundleId, challenge: bytes, receivedAt: job.receivedAt,
                    skewSeconds: verifier.timeBounds.maxFutureSkewSeconds)))
        }
        var outcomes = [Int: ChallengeOutcome]()
        while !pending.isEmpty {
            var jobIds = Set<String>()
            var round = [(position: Int, claim: ChallengeClaim)]()
            var later = [(position: Int, claim: ChallengeClaim)]()
            for entry in pending {
                if jobIds.insert(entry.claim.jobId).inserted { round.append(entry) } else { later.append(entry) }
            }
            let settled = try store.consumeChallenges(round.map(\.claim))
            for (position, claim) in round { outcomes[position] = settled[claim.jobId] }
            pending = later
        }
        return outcomes
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
