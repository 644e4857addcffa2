import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import DeviceIntelligence
import Foundation
import KafkaClient
import PostgresClient
import Store
import Testing
import Worker

/// A FakeStore whose reads and commits take a known time, so where a batch's time went can be checked.
final class SlowStore: DecisionStore, BatchTransaction, @unchecked Sendable {
    let inner: FakeStore
    let readDelay: TimeInterval
    let commitDelay: TimeInterval

    init(_ inner: FakeStore, readDelay: TimeInterval, commitDelay: TimeInterval) {
        (self.inner, self.readDelay, self.commitDelay) = (inner, readDelay, commitDelay)
    }

    func apps() throws(PGError) -> [AppIdentity: AppPolicy] {
        Thread.sleep(forTimeInterval: readDelay)
        return try inner.apps()
    }

    func batch<T>(_ body: (any BatchTransaction) throws(PGError) -> T) throws(PGError) -> T {
        try inner.batch { _ throws(PGError) in try body(self) }
    }

    func gather(_ request: GatherRequest) throws(PGError) -> Gathered {
        Thread.sleep(forTimeInterval: readDelay)
        return try inner.gather(request)
    }

    func intelligence(_ query: IntelligenceQuery) throws(PGError) -> IntelligenceSnapshot {
        Thread.sleep(forTimeInterval: readDelay)
        return try inner.intelligence(query)
    }

    func settle(_ decisions: [Decision]) throws(PGError) -> (stored: [Bool], crossings: [QuotaCrossing]) {
        Thread.sleep(forTimeInterval: commitDelay)
        return try inner.settle(decisions)
    }

    func consumeChallenges(_ claims: [ChallengeClaim]) throws(PGError) -> [String: ChallengeOutcome] {
        Thread.sleep(forTimeInterval: readDelay)
        return try inner.consumeChallenges(claims)
    }
}

/// The lane's reading and storing stages come from ``BatchTimings``: every read in `reading`, every settle
/// (each run of a batch run again) in `storing`, neither in the other.
@Suite struct BatchTimingsTests {
    let fake = FakeStore()

    init() {
        let (team, bundle) = (BatchProcessorTests.teamId, BatchProcessorTests.bundleId)
        fake.appPolicies[AppIdentity(teamId: team, bundleId: bundle)] = AppPolicy(teamId: team, bundleId: bundle)
    }

    func processor(_ store: any DecisionStore) -> BatchProcessor {
        BatchProcessor(
            verifier: JobVerifier(trust: BatchProcessorTests.trust, clock: FixedClock(Timestamp(seconds: 1_777_000_000))),
            store: store, devices: DeviceCache(),
            settings: BatchProcessor.Settings(verdictsTopic: "verdicts", deadLetterTopic: "dead", maxMessageBytes: 64 * 1024))
    }

    func message(_ value: [UInt8], offset: Int64) -> KafkaMessage {
        KafkaMessage(topic: "jobs", partition: 0, offset: offset, key: nil, value: value, headers: [], timestampMs: nil)
    }

    @Test func readsAndCommitsAreTimedApart() throws {
        let device = try Device()
        // Reads are slow, commits fast: storing would reach the reads' time if it took any of them in. The
        // delays are long against a sanitized build's own time, so only a leaked read crosses a bound.
        let slowReads = processor(SlowStore(fake, readDelay: 0.5, commitDelay: 0.02))
        var timings = BatchTimings()
        let out = try slowReads.process([
            message(BatchProcessorTests.attestationJob(device, jobId: "t-a"), offset: 1),
            message(BatchProcessorTests.assertionJob(device, jobId: "t-1", counter: 1), offset: 2),
        ], timings: &timings)
        #expect(out.count == 2)
        // At least the apps and the gather: two reads.
        #expect(timings.reading >= .milliseconds(1000), "\(timings)")
        #expect(timings.storing >= .milliseconds(20), "\(timings)")
        #expect(timings.storing < .milliseconds(500), "\(timings)")

        // Commits slow, reads fast: reading would reach the commit's time if it took it in.
        let slowCommits = processor(SlowStore(fake, readDelay: 0, commitDelay: 1))
        var later = BatchTimings()
        _ = try slowCommits.process([message(BatchProcessorTests.assertionJob(device, jobId: "t-2", counter: 2), offset: 3)], timings: &later)
        #expect(later.storing >= .milliseconds(1000), "\(later)")
        #expect(later.reading < .milliseconds(1000), "\(later)")
    }

    @Test func everyCommitRoundAddsToStoring() throws {
        let device = try Device()
        _ = try processor(fake).process([message(BatchProcessorTests.attestationJob(device, jobId: "r-a"), offset: 1)])
        // A writer that takes no lock stores counter 9 after the next read: the settle loses the race, and
        // the batch, run again whole, decides against 9 and commits.
        fake.raceCounters[device.keyId] = 9
        var timings = BatchTimings()
        let out = try processor(SlowStore(fake, readDelay: 0, commitDelay: 0.2)).process(
            [message(BatchProcessorTests.assertionJob(device, jobId: "r-7", counter: 7), offset: 2)], timings: &timings)
        #expect(JSONValue.parse(out[0].value)?["reason"] == .string("counter_not_increasing"))
        #expect(timings.storing >= .milliseconds(400), "\(timings)")
    }
}
