import AttestCore
import AttestJobs
import AttestMint
import AttestVerifier
import Testing

/// Job JSON in, verdict JSON out: field validation, the receivedAt bounds and the verdict format.
@Suite struct JobTests {
    typealias F = MintFixture

    private func job(_ members: [(String, JSONValue)]) -> JSONValue { .object(members) }

    private func attestationJob(receivedAt: Timestamp = F.time) -> [(String, JSONValue)] {
        [
            ("jobId", .string("job-1")), ("teamId", .string(F.teamId)), ("bundleId", .string(F.bundleId)),
            ("keyId", .string(Base64.encode(F.device.keyId))),
            ("attestationObject", .string(Base64.encode(F.mint().attestationObject))),
            ("clientDataHash", .string(Base64.encode(F.clientDataHash))), ("challenge", .string(F.challenge)),
            ("receivedAt", .string(receivedAt.rfc3339)),
        ]
    }

    private func decide(_ json: JSONValue, now: Timestamp = F.time) -> JSONValue {
        let verifier = JobVerifier(trust: F.trust, clock: FixedClock(now))
        switch Job.parse(json) {
        case .failure(let invalid): return verifier.rejection(jobId: invalid.jobId, invalid.failure).json
        case .success(let job):
            guard case .attestation = job.payload else { return .null }
            return verifier.check(job, JobCheckInputs(now: now, app: AppRules(environments: .production))).verdict.json
        }
    }

    @Test func acceptedAttestationVerdictCarriesTheSpecFields() throws {
        let v = decide(job(attestationJob()))
        #expect(v["ok"] == .bool(true))
        #expect(v["jobId"] == .string("job-1"))
        #expect(v["kind"] == .string("attestation"))
        #expect(v["environment"] == .string("production"))
        #expect(v["counter"] == .int(0))
        #expect(v["publicKey"] == .string(Base64.encode(F.device.publicKeyX962)))
        #expect(v["verificationTime"] == .string(F.time.rfc3339))
        #expect(v["receipt"]?["type"] == .string("ATTEST"))
        #expect(v["extensions"] == .object([("apple_bundle_version_01", .string("1")), ("apple_validation_category_01", .int(1))]))
        #expect(v["code"] == nil)
    }

    @Test func kindIsInferredFromTheObjectField() throws {
        let parsed = try Job.parse(job(attestationJob())).get()
        #expect(parsed.kind == .attestation)
        // An explicit kind wins: an "assertion" job must then carry `assertion`.
        var members = attestationJob()
        members.append(("kind", .string("assertion")))
        #expect(decide(job(members))["reason"] == .string("missing_field"))
        members = attestationJob()
        members.append(("kind", .string("other")))
        #expect(decide(job(members))["reason"] == .string("invalid_field"))
    }

    @Test func receivedAtIsBoundedByAgeAndSkew() {
        let now = F.time
        #expect(decide(job(attestationJob(receivedAt: F.time)), now: now.adding(seconds: 86_400))["ok"] == .bool(true))
        let old = decide(job(attestationJob()), now: now.adding(seconds: 86_401))
        #expect(old["code"] == .string("job_invalid"))
        #expect(old["reason"] == .string("received_at_out_of_range"))
        #expect(decide(job(attestationJob()), now: now.adding(seconds: -60))["ok"] == .bool(true))
        #expect(decide(job(attestationJob()), now: now.adding(seconds: -61))["reason"] == .string("received_at_out_of_range"))
    }

    @Test func missingAndInvalidFieldsAreJobInvalid() {
        for field in ["jobId", "teamId", "bundleId", "keyId", "clientDataHash", "receivedAt"] {
            let v = decide(job(attestationJob().filter { $0.0 != field }))
            #expect(v["code"] == .string("job_invalid"), "\(field)")
            #expect(v["reason"] == .string("missing_field"), "\(field)")
        }
        var members = attestationJob().filter { $0.0 != "receivedAt" }
        members.append(("receivedAt", .string("yesterday")))
        #expect(decide(job(members))["reason"] == .string("invalid_field"))
        #expect(decide(job(members))["jobId"] == .string("job-1"))
        members = attestationJob().filter { $0.0 != "teamId" }
        members.append(("teamId", .int(5)))
        #expect(decide(job(members))["reason"] == .string("invalid_field"))
        #expect(decide(job([("jobId", .string("x"))]))["reason"] == .string("missing_field"))
        #expect(decide(.array([]))["code"] == .string("job_invalid"))
    }

    /// Every spelling but the exact pair is refused, naming the field: split or joined App IDs, case, spaces,
    /// trailing or doubled dots, look-alikes, NUL, over-long identifiers.
    @Test func teamIdAndBundleIdMustBeAnAppIdPrefixAndABundleIdentifier() {
        func rejection(team: String = F.teamId, bundle: String = F.bundleId) -> (reason: JSONValue?, message: String) {
            var members = attestationJob().filter { $0.0 != "teamId" && $0.0 != "bundleId" }
            members += [("teamId", .string(team)), ("bundleId", .string(bundle))]
            let v = decide(job(members))
            if case .string(let m)? = v["message"] { return (v["reason"], m) }
            return (v["reason"], "")
        }
        #expect(rejection().reason == nil)
        let badTeams = [
            "TEAM123456.com", "TEAM12345", "TEAM1234567", "team123456", "TEAM 23456", " TEAM123456", "TEAM123456 ",
            "TEAM12345.", "TEAM12345\u{0130}", "ТЕAM123456", "TEAM12345６", "TEAM-23456", "TEAM_23456",
        ]
        for team in badTeams {
            let r = rejection(team: team)
            #expect(r.reason == .string("invalid_field"), "\(team)")
            #expect(r.message.hasPrefix("teamId"), "\(team): \(r.message)")
        }
        let badBundles = [
            "com.", ".com", "com..example", "com.example.app.", "com example", " com.example", "com.exаmple",
            "com.example/app", "com.example+app", "com.exam\u{301}ple", ".", String(repeating: "a", count: 256), "com._.", "com.\u{FF3F}app",
        ]
        for bundle in badBundles {
            let r = rejection(bundle: bundle)
            #expect(r.reason == .string("invalid_field"), "\(bundle)")
            #expect(r.message.hasPrefix("bundleId"), "\(bundle): \(r.message)")
        }
        // NUL is refused by the string reader before the identifier rules.
        #expect(rejection(team: "TEAM12345\u{0}").reason == .string("invalid_field"))
        #expect(rejection(bundle: "com.ex\u{0}ample").reason == .string("invalid_field"))
        // Underscores, as Apple signs them (its App Attest sample is com.apple.example_app_attest).
        for bundle in [
            "app", "com.example.my-app", "A.b9.C-", String(repeating: "a", count: 255), "com.apple.example_app_attest", "_", "a._b_.-",
        ] {
            #expect(AppIdentity(validating: F.teamId, bundle) != nil, "\(bundle)")
        }
        #expect(AppIdentity(validating: "ABCDE12345.com", "example.app") == nil)
        #expect(AppIdentity(validating: "ABCDE12345", "com.example.app")?.appId == "ABCDE12345.com.example.app")
    }

    /// Device metadata is bounded before it reaches a row or an index: 256 bytes pass, 257 are refused
    /// naming the field, counted in bytes (two-byte characters reach the bound at 128).
    @Test func deviceMetadataIsBoundedInBytes() {
        func reason(_ name: String, _ value: String) -> JSONValue? {
            decide(job(attestationJob().filter { $0.0 != name } + [(name, .string(value))]))["reason"]
        }
        for name in ["deviceId", "deviceFingerprint", "subjectId", "deviceModel", "osVersion", "appVersion", "appBuildNumber", "platform"] {
            #expect(reason(name, String(repeating: "a", count: Job.maxMetadataBytes)) == nil, "\(name)")
            #expect(reason(name, String(repeating: "a", count: Job.maxMetadataBytes + 1)) == .string("invalid_field"), "\(name)")
            #expect(reason(name, String(repeating: "é", count: Job.maxMetadataBytes / 2 + 1)) == .string("invalid_field"), "\(name)")
        }
    }

    @Test func strictJSONParsing() {
        #expect(JSONValue.parse(Array(#"{"a":1,"a":2}"#.utf8)) == nil)
        #expect(JSONValue.parse(Array(#"{"a":1,}"#.utf8)) == nil)
        #expect(JSONValue.parse(Array(#"{"a":"\x"}"#.utf8)) == nil)
        #expect(JSONValue.parse(Array(#"{"a":"\ud800"}"#.utf8)) == nil)
        #expect(JSONValue.parse(Array(#"{"a":"é\u00e9\ud83d\ude00"}"#.utf8))?["a"] == .string("éé😀"))
        #expect(JSONValue.parse(Array(#"{"a":01}"#.utf8)) == nil)
        #expect(JSONValue.parse(Array("{\"a\":\"\u{1}\"}".utf8)) == nil)
        #expect(JSONValue.parse([0x22, 0xff, 0x22]) == nil)
        #expect(JSONValue.parse(Array((String(repeating: "[", count: 33) + String(repeating: "]", count: 33)).utf8)) == nil)
        #expect(JSONValue.parse(Array((String(repeating: "[", count: 32) + String(repeating: "]", count: 32)).utf8)) != nil)
        #expect(JSONValue.parse(Array(" {\"n\": -1.5e3, \"t\": true} ".utf8))?["n"] == .double(-1500))
    }

    @Test func verdictJSONEscapesAndRoundTrips() {
        let value = JSONValue.object([("s", .string("a\"b\\c\n\u{1}é")), ("n", .int(-3)), ("a", .array([.null, .bool(false)]))])
        #expect(JSONValue.parse(Array(value.serialized().utf8)) == value)
    }
}
