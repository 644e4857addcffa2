import AttestCore
import AttestCrypto
import AttestJobs
import AttestVerifier
import Testing

/// Every shared vector gives its expected ok/code/reason (and key, environment, counter, extensions)
/// through the library, exactly as `attest-worker verify` decides it.
@Suite struct VectorTests {
    @Test(arguments: Fixtures.cases.map { $0["name"]!.stringValue! })
    func vector(_ name: String) throws {
        let c = Fixtures.vectorCase(name)
        let expect = try #require(c["expect"])
        let verdict = decide(c)
        let json = verdict.json
        #expect(json["ok"] == expect["ok"], "\(verdict.failure?.description ?? "accepted")")
        if expect["ok"] == .bool(false) {
            #expect(json["code"] == expect["code"])
            var reasons = [expect["reason"]!]
            if case .array(let alternatives)? = expect["reasonAlternatives"] { reasons += alternatives }
            #expect(reasons.contains(json["reason"] ?? .null), "got \(json["reason"].map { $0.serialized() } ?? "none")")
        } else {
            for key in ["environment", "counter", "publicKey", "extensions"] {
                if let expected = expect[key] { #expect(json[key] == expected, "\(key)") }
            }
        }
    }

    private func decide(_ c: JSONValue) -> Verdict {
        let at = Timestamp(rfc3339: c["verifyAt"]!.stringValue!)!
        let verifier = JobVerifier(trust: Fixtures.trust(c["trust"]!.stringValue!), clock: FixedClock(at))
        let job = try! Job.parse(Fixtures.job(for: c)).get()
        switch job.payload {
        case .attestation:
            let app = AppRules(environments: EnvironmentPolicy(rawValue: c["environment"]!.stringValue!)!)
            return verifier.check(job, JobCheckInputs(now: at, app: app)).verdict
        case .assertion, .android:
            let device = job.storedPublicKey.map {
                StoredDevice(publicKey: ECPublicKey(p256Point: Base64.decode($0)!)!, counter: job.storedCounter ?? 0)
            }
            // The vectors' lines carry no key environment, so no environment policy applies to assertions.
            let key = device.map { AttestedKey(device: $0, environment: nil) }
            return verifier.check(job, JobCheckInputs(now: at, app: AppRules(environments: .production), key: key)).verdict
        }
    }
}
