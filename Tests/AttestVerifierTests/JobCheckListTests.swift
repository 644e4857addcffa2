import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import Foundation
import Testing

/// The job check list (``JobVerifier/check(_:_:)``): its steps in the contract's order, each with its code and
/// reason, the first failure deciding, every time check against the one `now` in its inputs.
@Suite struct JobCheckListTests {
    typealias F = MintFixture
    /// A clock that is never the inputs' now: the list must not read it.
    let verifier = JobVerifier(trust: F.trust, clock: FixedClock(Timestamp(seconds: 1)))

    func attestation(receivedAt: Timestamp = F.time, options: AttestationOptions = AttestationOptions(), challenge: Bool = true) -> Job {
        var members: [(String, JSONValue)] = [
            ("jobId", .string("list-1")), ("teamId", .string(F.teamId)), ("bundleId", .string(F.bundleId)),
            ("keyId", .string(Base64.encode(F.device.keyId))),
            ("attestationObject", .string(Base64.encode(F.mint(options).attestationObject))),
            ("clientDataHash", .string(Base64.encode(F.clientDataHash))), ("receivedAt", .string(receivedAt.rfc3339)),
        ]
        if challenge { members.append(("challenge", .string(F.challenge))) }
        return try! Job.parse(.object(members)).get()
    }

    func assertion(counter: UInt32 = 1) -> Job {
        let minted = try! F.device.mintAssertion(teamId: F.teamId, bundleId: F.bundleId, clientDataHash: F.clientDataHash, counter: counter)
        return try! Job.parse(.object([
            ("jobId", .string("list-2")), ("teamId", .string(F.teamId)), ("bundleId", .string(F.bundleId)),
            ("keyId", .string(Base64.encode(F.device.keyId))), ("assertion", .string(Base64.encode(minted.assertion))),
            ("clientDataHash", .string(Base64.encode(F.clientDataHash))), ("receivedAt", .string(F.time.rfc3339)),
        ])).get()
    }

    var key: AttestedKey { AttestedKey(device: StoredDevice(publicKey: ECPublicKey(p256Point: F.device.publicKeyX962)!, counter: 0), environment: "production") }

    func reason(_ checked: JobVerifier.Checked) -> String { checked.verdict.failure.map { "\($0.code.rawValue)/\($0.reason.rawValue)" } ?? "ok" }

    @Test func aBundleIdWithUnderscoresVerifiesAsApplesSampleAppDoes() throws {
        let minted = try F.pki.mintAttestation(
            device: F.device, teamId: F.teamId, bundleId: "com.example.under_score_app", clientDataHash: F.clientDataHash, at: F.date)
        func job(_ bundleId: String) throws -> Job {
            try Job.parse(.object([
                ("jobId", .string("underscore-1")), ("teamId", .string(F.teamId)), ("bundleId", .string(bundleId)),
                ("keyId", .string(Base64.encode(F.device.keyId))), ("attestationObject", .string(Base64.encode(minted.attestationObject))),
                ("clientDataHash", .string(Base64.encode(F.clientDataHash))), ("receivedAt", .string(F.time.rfc3339)),
            ])).get()
        }
        let inputs = JobCheckInputs(now: F.time, app: AppRules(environments: .production))
        #expect(reason(verifier.check(try job("com.example.under_score_app"), inputs)) == "ok")
        // The App ID is still exact: the same object under the hyphenated spelling fails Apple's rpIdHash.
        #expect(reason(verifier.check(try job("com.example.under-score-app"), inputs)) == "apple_validation_failed/rp_id_mismatch")
    }

    @Test func everyTimeCheckUsesTheInputsNow() {
        let accepted = verifier.check(attestation(), JobCheckInputs(now: F.time, app: AppRules(environments: .production)))
        #expect(reason(accepted) == "ok")
        #expect(accepted.verdict.verifiedAt == F.time)
        // The same job a day and a minute later is too old, whatever the verifier's clock says.
        let late = verifier.check(attestation(), JobCheckInputs(now: F.time.adding(seconds: 86_460), app: AppRules(environments: .production)))
        #expect(reason(late) == "job_invalid/received_at_out_of_range")
    }

    @Test func receivedAtComesBeforeTheAppAndTheAppBeforeTheChallenge() {
        let future = attestation(receivedAt: F.time.adding(seconds: 120))
        #expect(reason(verifier.check(future, JobCheckInputs(now: F.time, app: nil))) == "job_invalid/received_at_out_of_range")
        #expect(reason(verifier.check(attestation(challenge: false), JobCheckInputs(now: F.time, app: nil))) == "job_invalid/unknown_app")
        #expect(!verifier.reachesChallenge(future, JobCheckInputs(now: F.time, app: AppRules(environments: .production))))
        #expect(!verifier.reachesChallenge(attestation(), JobCheckInputs(now: F.time, app: nil)))
        #expect(verifier.reachesChallenge(attestation(), JobCheckInputs(now: F.time, app: AppRules(environments: .production))))
    }

    @Test func aWorkerIssuedChallengeIsCheckedBeforeTheObject() {
        let worker = AppRules(environments: .production, challenges: .worker(refusal: nil))
        // A broken object behind a missing challenge: the challenge step answers, no ECDSA is spent.
        let broken = attestation(options: AttestationOptions(nonce: .absent), challenge: false)
        #expect(reason(verifier.check(broken, JobCheckInputs(now: F.time, app: worker))) == "challenge_invalid/missing_field")
        let refused = AppRules(
            environments: .production,
            challenges: .worker(refusal: VerificationFailure(.challengeAlreadyUsed, .challengeAlreadyUsed, "taken")))
        #expect(reason(verifier.check(attestation(), JobCheckInputs(now: F.time, app: refused))) == "challenge_already_used/challenge_already_used")
        #expect(reason(verifier.check(attestation(), JobCheckInputs(now: F.time, app: worker))) == "ok")
        // Backend challenges: only the binding rule, inside the object checks.
        #expect(reason(verifier.check(attestation(challenge: false), JobCheckInputs(now: F.time, app: AppRules(environments: .production)))) == "ok")
    }

    @Test func anAssertionsKeyMustBeOfAnEnvironmentTheAppAdmits() {
        let production = AppRules(environments: .production)
        #expect(reason(verifier.check(assertion(), JobCheckInputs(now: F.time, app: production, key: key))) == "ok")
        var development = key
        development.environment = "development"
        let refused = verifier.check(assertion(), JobCheckInputs(now: F.time, app: production, key: development))
        #expect(reason(refused) == "apple_validation_failed/environment_not_allowed")
        #expect(refused.verdict.environment == .development && refused.verdict.counter == nil && refused.verified == nil)
        // The signature is checked first: a forged assertion is signature_invalid whatever the environment.
        var forged = development
        forged.device = StoredDevice(publicKey: ECPublicKey(p256Point: F.otherDevice.publicKeyX962)!, counter: 0)
        #expect(reason(verifier.check(assertion(), JobCheckInputs(now: F.time, app: production, key: forged))) == "assertion_invalid/signature_invalid")
        // No stored environment (the offline verify's lines): no policy applies.
        var unknown = development
        unknown.environment = nil
        #expect(reason(verifier.check(assertion(), JobCheckInputs(now: F.time, app: production, key: unknown))) == "ok")
    }

    @Test func theQuotaIsAskedLastAndOnlyForAttestationsThatPassedEverythingElse() {
        let asked = Counter()
        let full: (Job) -> (limit: Int, current: Int)? = { _ in asked.add(); return (limit: 10, current: 10) }
        let app = AppRules(environments: .production)
        let refused = verifier.check(attestation(), JobCheckInputs(now: F.time, app: app, quota: full))
        #expect(reason(refused) == "quota_exceeded/quota_exceeded")
        #expect(refused.verdict.quota?.limit == 10 && refused.verdict.quota?.current == 10 && refused.verified == nil)
        #expect(asked.value == 1)
        let broken = verifier.check(attestation(options: AttestationOptions(nonce: .absent)), JobCheckInputs(now: F.time, app: app, quota: full))
        #expect(reason(broken) == "apple_validation_failed/nonce_mismatch")
        #expect(reason(verifier.check(assertion(), JobCheckInputs(now: F.time, app: app, key: key, quota: full))) == "ok")
        #expect(asked.value == 1)
        let admitted = verifier.check(attestation(), JobCheckInputs(now: F.time, app: app, quota: { _ in nil }))
        #expect(reason(admitted) == "ok")
        if case .attestation? = admitted.verified {} else { Issue.record("an admitted attestation hands on its verified object") }
    }

    final class Counter: @unchecked Sendable {
        private(set) var value = 0
        func add() { value += 1 }
    }
}
