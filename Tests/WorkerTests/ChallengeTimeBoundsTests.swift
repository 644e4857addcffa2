import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import KafkaClient
import Testing
import Worker

/// The batch processor's time bounds with the FakeStore: a job backdated before its challenge's issue is
/// told so and consumes nothing; the broker-timestamp bound comes before any claim; one `now` per batch.
@Suite struct ChallengeTimeBoundsTests {
    var base = ChallengeTests()

    func processor(allowance: Int64? = nil) -> BatchProcessor {
        BatchProcessor(
            verifier: JobVerifier(
                trust: BatchProcessorTests.trust, clock: FixedClock(ChallengeTests.receivedAt),
                timeBounds: JobVerifier.TimeBounds(maxReceivedBeforeBrokerSeconds: allowance)),
            store: base.store, devices: DeviceCache(),
            settings: BatchProcessor.Settings(verdictsTopic: "verdicts", deadLetterTopic: "dead"))
    }

    mutating func message(_ value: [UInt8], brokerMs: Int64?) -> KafkaMessage {
        let m = base.message(value)
        return KafkaMessage(
            topic: m.topic, partition: m.partition, offset: m.offset, key: nil, value: value, headers: [], timestampMs: brokerMs)
    }

    /// Issued `secondsAfter` the jobs' receivedAt (a negative value: before it), valid for 5 minutes.
    func issue(secondsAfterReceivedAt secondsAfter: Int64) -> String { base.issue(age: -secondsAfter) }

    @Test(arguments: [3_600, 82_800, 61]) mutating func aBackdatedJobIsToldAndConsumesNothing(_ secondsAfter: Int64) throws {
        let challenge = issue(secondsAfterReceivedAt: secondsAfter)
        let out = try processor().process([
            message(ChallengeTests.attestation(try Device(), jobId: "back", challenge: challenge), brokerMs: nil)
        ])
        #expect(base.outcome(out[0]) == (false, "challenge_expired", "challenge_not_yet_issued"))
        #expect(base.store.challenges[Base64.decode(challenge)!]?.usedBy == nil)
    }

    @Test mutating func withinTheSkewTheJobConsumesItsChallenge() throws {
        let challenge = issue(secondsAfterReceivedAt: 60)
        let out = try processor().process([
            message(ChallengeTests.attestation(try Device(), jobId: "skew", challenge: challenge), brokerMs: nil)
        ])
        #expect(base.outcome(out[0]).ok, "\(String(decoding: out[0].value, as: UTF8.self))")
        #expect(base.store.challenges[Base64.decode(challenge)!]?.usedBy == "skew")
    }

    @Test mutating func aReceivedAtTooFarBeforeTheBrokerTimestampMakesNoClaim() throws {
        let challenge = issue(secondsAfterReceivedAt: -10)
        let receivedAtMs = ChallengeTests.receivedAt.microseconds / 1000
        let out = try processor(allowance: 300).process([
            message(ChallengeTests.attestation(try Device(), jobId: "b-1", challenge: challenge), brokerMs: receivedAtMs + 301_000),
            message(ChallengeTests.attestation(try Device(), jobId: "b-2", challenge: challenge), brokerMs: 9_300_000_000_000_000),
            message(ChallengeTests.attestation(try Device(), jobId: "b-3", challenge: challenge), brokerMs: receivedAtMs + 300_000),
        ])
        #expect(base.outcome(out[0]) == (false, "job_invalid", "received_at_broker_mismatch"))
        #expect(base.outcome(out[1]) == (false, "job_invalid", "received_at_broker_mismatch"))
        #expect(base.outcome(out[2]).ok)
        #expect(base.store.challenges[Base64.decode(challenge)!]?.usedBy == "b-3")
    }

    @Test mutating func aMissingOrNegativeBrokerTimestampSkipsTheCheck() throws {
        let out = try processor(allowance: 0).process([
            message(ChallengeTests.attestation(try Device(), jobId: "n-1", challenge: issue(secondsAfterReceivedAt: -10)), brokerMs: nil),
            message(ChallengeTests.attestation(try Device(), jobId: "n-2", challenge: issue(secondsAfterReceivedAt: -10)), brokerMs: -1),
        ])
        #expect(out.allSatisfy { base.outcome($0).ok })
    }
}

/// ATTEST_MAX_RECEIVED_BEFORE_BROKER: unset by default (no broker check), else whole seconds ≥ 0.
@Suite struct BrokerAllowanceSettingTests {
    let required = ["ATTEST_KAFKA_BROKERS": "127.0.0.1:9092", "ATTEST_DATABASE_URL": "postgresql://db/attest"]

    @Test func unsetByDefaultAndWholeSecondsWhenSet() throws {
        #expect(try WorkerConfiguration.load(file: nil, environment: required).0.maxReceivedBeforeBrokerSeconds == nil)
        for (text, value) in [("0", Int64(0)), ("300", 300), ("86400", 86_400)] {
            let environment = required.merging(["ATTEST_MAX_RECEIVED_BEFORE_BROKER": text]) { a, _ in a }
            #expect(try WorkerConfiguration.load(file: nil, environment: environment).0.maxReceivedBeforeBrokerSeconds == value)
        }
    }

    @Test func anythingElseIsReportedByName() {
        for bad in ["-1", "1.5", "soon", " 30", "99999999999999999999"] {
            let environment = required.merging(["ATTEST_MAX_RECEIVED_BEFORE_BROKER": bad]) { a, _ in a }
            do {
                _ = try WorkerConfiguration.load(file: nil, environment: environment)
                Issue.record("\(bad) accepted")
            } catch {
                #expect(error.description.contains("ATTEST_MAX_RECEIVED_BEFORE_BROKER"), "\(bad)")
            }
        }
    }
}
