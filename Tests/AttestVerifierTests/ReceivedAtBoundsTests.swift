import AttestCore
import AttestJobs
import AttestVerifier
import Testing

/// receivedAt against the batch's `now` and the message's broker timestamp, at the edges, with absurd
/// timestamps and configured bounds that must never trap.
@Suite struct ReceivedAtBoundsTests {
    static let receivedAt = Timestamp(seconds: 1_777_000_000)
    static let receivedAtMs = receivedAt.microseconds / 1000

    static func job(_ receivedAt: Timestamp) -> Job {
        let json = JSONValue.object([
            ("jobId", .string("j")), ("kind", .string("assertion")), ("teamId", .string("ABCDE12345")),
            ("bundleId", .string("com.example.app")), ("keyId", .string("k")), ("assertion", .string("a")),
            ("clientDataHash", .string("aGFzaA==")), ("receivedAt", .string(receivedAt.rfc3339)),
        ])
        guard case .success(let job) = Job.parse(json) else { fatalError("test job does not parse") }
        return job
    }

    static func verifier(allowance: Int64? = 300, skew: Int64 = 60, maxAge: Int64 = 86_400) -> JobVerifier {
        JobVerifier(
            trust: MintFixture.trust, clock: FixedClock(receivedAt),
            timeBounds: JobVerifier.TimeBounds(maxAgeSeconds: maxAge, maxFutureSkewSeconds: skew, maxReceivedBeforeBrokerSeconds: allowance))
    }

    static func reason(_ verifier: JobVerifier, received: Timestamp = receivedAt, now: Timestamp = receivedAt, brokerMs: Int64?) -> String? {
        verifier.checkReceivedAt(job(received), now: now, brokerTimestampMs: brokerMs).map { "\($0.code.rawValue)/\($0.reason.rawValue)" }
    }

    static let mismatch = "job_invalid/received_at_broker_mismatch"

    @Test func receivedAtMayBeUpToTheAllowanceBeforeTheBrokerTimestamp() {
        let v = Self.verifier(allowance: 300)
        // Broker stamped 300 s after receivedAt: the edge, admitted; one millisecond later: refused.
        #expect(Self.reason(v, brokerMs: Self.receivedAtMs + 300_000) == nil)
        #expect(Self.reason(v, brokerMs: Self.receivedAtMs + 300_001) == Self.mismatch)
        // The reproduced back-dating: receivedAt 1 h and 23 h before the broker's append.
        #expect(Self.reason(v, brokerMs: Self.receivedAtMs + 3_600_000) == Self.mismatch)
        #expect(Self.reason(v, brokerMs: Self.receivedAtMs + 82_800_000) == Self.mismatch)
        #expect(Self.reason(Self.verifier(allowance: 0), brokerMs: Self.receivedAtMs) == nil)
        #expect(Self.reason(Self.verifier(allowance: 0), brokerMs: Self.receivedAtMs + 1) == Self.mismatch)
    }

    @Test func receivedAtMayBeUpToTheFutureSkewAfterTheBrokerTimestamp() {
        let v = Self.verifier(skew: 60)
        #expect(Self.reason(v, brokerMs: Self.receivedAtMs - 60_000) == nil)
        #expect(Self.reason(v, brokerMs: Self.receivedAtMs - 60_001) == Self.mismatch)
    }

    /// The broker stamps the append, not the consumption: a job that waited in Kafka for most of the
    /// maximum job age passes the broker check (and the age check decides as before).
    @Test func queueLagInsideKafkaNeverTripsIt() {
        let v = Self.verifier(allowance: 5)
        let later = Self.receivedAt.adding(seconds: 86_000)
        #expect(Self.reason(v, now: later, brokerMs: Self.receivedAtMs + 2_000) == nil)
        #expect(Self.reason(v, now: Self.receivedAt.adding(seconds: 86_401), brokerMs: Self.receivedAtMs + 2_000)
            == "job_invalid/received_at_out_of_range")
    }

    @Test func missingOrNegativeTimestampsSkipTheCheckAndAbsurdOnesNeverTrap() {
        let v = Self.verifier(allowance: 300)
        for skipped: Int64? in [nil, -1, -2, .min] {
            #expect(Self.reason(v, brokerMs: skipped) == nil, "\(String(describing: skipped))")
        }
        // 9e15 and 9.3e15 ms (beyond Int64 microseconds) and Int64.max: far after receivedAt.
        for absurd: Int64 in [9_000_000_000_000_000, 9_300_000_000_000_000, .max] {
            #expect(Self.reason(v, brokerMs: absurd) == Self.mismatch, "\(absurd)")
        }
        // receivedAt years after 1970 against a broker timestamp of 0: after it by far more than the skew.
        #expect(Self.reason(v, brokerMs: 0) == Self.mismatch)
    }

    @Test func withoutTheSettingTheBrokerTimestampIsIgnored() {
        let v = Self.verifier(allowance: nil)
        for ms: Int64? in [nil, -1, 0, Self.receivedAtMs + 82_800_000, .max] {
            #expect(Self.reason(v, brokerMs: ms) == nil)
        }
    }

    @Test func extremeConfiguredBoundsNeverTrap() {
        let v = Self.verifier(allowance: .max, skew: .max, maxAge: .max)
        for ms: Int64? in [nil, 0, Self.receivedAtMs, .max] {
            #expect(Self.reason(v, received: Timestamp(seconds: 0), brokerMs: ms) == nil)
        }
        let strict = Self.verifier(allowance: 0, skew: 0, maxAge: 1)
        #expect(Self.reason(strict, now: Self.receivedAt.adding(seconds: 1), brokerMs: Self.receivedAtMs) == nil)
        #expect(Self.reason(strict, now: Self.receivedAt.adding(seconds: 2), brokerMs: Self.receivedAtMs) == "job_invalid/received_at_out_of_range")
    }
}
