import AttestCore
import AttestCrypto
import AttestJobs
import AttestVerifier
import DeviceIntelligence
import Foundation
import Testing

/// Android job JSON in, verdict out: the record classifier routes the Android kinds, each field is
/// validated with its reason, the offline verdict carries the attested facts and risk, and the worker
/// answers Android jobs it does not decide yet.
@Suite struct AndroidJobTests {
    /// A real Pixel 9 Pro (Android 16, remote key provisioning, locked and VERIFIED) chain, leaf first.
    static let chain: [String] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/android/caiman_sdk36_TEE_EC_RKP.pem")
        return PEM.decodeAll(try! String(contentsOf: url, encoding: .utf8))!.map { Base64.encode($0) }
    }()
    static let challenge = "ZDY4OGQ3NjMtNjExOC00Y2E2LTk0YjItZTZjZDllZDdlNGU0"
    static let package = "com.google.android.attestation"
    /// Inside every certificate's validity but the root's (the provisioned intermediates last a month).
    static let receivedAt = Timestamp(rfc3339: "2025-10-01T00:00:00Z")!

    static func attestation(_ changes: [(String, JSONValue?)] = []) -> String {
        var members: [(String, JSONValue)] = [
            ("jobId", .string("a-1")), ("kind", .string("android_attestation")), ("packageName", .string(package)),
            ("certificateChain", .array(chain.map(JSONValue.string))), ("challenge", .string(challenge)),
            ("receivedAt", .string(receivedAt.rfc3339)), ("deviceModel", .string("Pixel 9 Pro")),
        ]
        for (name, value) in changes {
            members.removeAll { $0.0 == name }
            if let value { members.append((name, value)) }
        }
        return JSONValue.object(members).serialized()
    }

    static let verifier = JobVerifier(trust: .apple, clock: FixedClock(receivedAt))

    static func verdict(_ line: String) -> Verdict {
        verifier.offlineVerdict(for: line, policy: .production)
    }

    @Test func aRealAttestationIsAcceptedWithItsFactsAndRisk() throws {
        let v = Self.verdict(Self.attestation())
        #expect(v.ok, "\(String(describing: v.failure))")
        let json = v.json
        #expect(json["kind"] == .string("android_attestation"))
        #expect(json["packageName"] == .string(Self.package))
        #expect(json["teamId"] == .null && json["bundleId"] == .null)
        #expect(json["schemaVersion"] == .int(4))
        #expect(json["deviceModel"] == .string("Pixel 9 Pro"))
        let leaf = try Certificate(der: Base64.decode(Self.chain[0])!)
        #expect(json["keyId"] == .string(Base64.encode(Digest.sha256.hash(leaf.subjectPublicKeyInfo))))
        #expect(json["publicKey"] == .string(Base64.encode(leaf.subjectPublicKeyInfo)))
        let android = try #require(json["android"])
        #expect(android["attestationSecurityLevel"] == .string("TRUSTED_ENVIRONMENT"))
        #expect(android["verifiedBootState"] == .string("VERIFIED"))
        #expect(android["deviceLocked"] == .bool(true))
        #expect(android["osVersion"] == .int(160000))
        #expect(android["osPatchLevel"] == .int(202511))
        #expect(android["packages"].flatMap { if case .array(let items) = $0 { items.first?["name"] } else { nil } } == .string(Self.package))
        // A locked, VERIFIED TEE device on a current patch: only the StrongBox factor (5 points).
        let factors = try #require(v.deviceIntelligence).assessment.factors
        #expect(factors.map(\.kind) == [.noStrongBox])
        #expect(v.deviceIntelligence?.assessment.category == .trusted)
        #expect(v.deviceIntelligence?.history.attestations == 1)
    }

    /// Each field with the reason a backend sees.
    @Test(arguments: [
        ("packageName", nil, "job_invalid", "missing_field"),
        ("packageName", JSONValue.string("com..example"), "job_invalid", "invalid_field"),
        ("packageName", JSONValue.string("1com.example"), "job_invalid", "invalid_field"),
        ("packageName", JSONValue.string(String(repeating: "a", count: 256)), "job_invalid", "invalid_field"),
        ("certificateChain", nil, "job_invalid", "missing_field"),
        ("certificateChain", JSONValue.string("MIIB"), "job_invalid", "invalid_field"),
        ("certificateChain", JSONValue.array([.int(1), .int(2)]), "job_invalid", "invalid_field"),
        ("certificateChain", JSONValue.array(Array(repeating: .string("MIIB"), count: 11)), "attestation_object_invalid", "too_large"),
        ("challenge", nil, "job_invalid", "missing_field"),
        ("challenge", JSONValue.string(String(repeating: "A", count: 513)), "challenge_invalid", "too_large"),
        ("receivedAt", JSONValue.string("yesterday"), "job_invalid", "invalid_field"),
        ("receivedAt", JSONValue.string("2025-10-01T00:02:01Z"), "job_invalid", "received_at_out_of_range"),
        ("signingCertificateDigests", JSONValue.array([.string("00")]), "job_invalid", "invalid_field"),
        ("signingCertificateDigests", JSONValue.string("00"), "job_invalid", "invalid_field"),
        ("signingCertificateDigests", JSONValue.array([.string(String(repeating: "0", count: 64))]), "android_validation_failed",
         "signing_certificate_mismatch"),
        ("deviceModel", JSONValue.string(String(repeating: "m", count: 257)), "job_invalid", "invalid_field"),
    ] as [(String, JSONValue?, String, String)])
    func fieldsAreValidated(_ name: String, _ value: JSONValue?, _ code: String, _ reason: String) {
        let json = Self.verdict(Self.attestation([(name, value)])).json
        #expect(json["jobId"] == .string("a-1"))
        #expect(json["code"] == .string(code) && json["reason"] == .string(reason), "\(json["code"] ?? .null)/\(json["reason"] ?? .null)")
    }

    /// The registered digest in the forms apksigner and keytool print it (hex, upper case, colon pairs).
    @Test func signingDigestsAreReadInTheCommonForms() throws {
        let leaf = try Certificate(der: Base64.decode(Self.chain[0])!)
        let description = try KeyDescription(der: leaf.extension(.androidKeyDescription)!.value)
        let hex = Hex.encode(description.softwareEnforced.attestationApplicationId!.signatureDigests[0])
        var pairs = [String]()
        var rest = Substring(hex.uppercased())
        while !rest.isEmpty { pairs.append(String(rest.prefix(2))); rest = rest.dropFirst(2) }
        for form in [hex, hex.uppercased(), pairs.joined(separator: ":")] {
            let v = Self.verdict(Self.attestation([("signingCertificateDigests", .array([.string(form)]))]))
            #expect(v.ok, "\(form): \(String(describing: v.failure))")
        }
    }

    /// The worker's classifier reads an Android job as a job of its package's own app, which the worker
    /// replaces by the app the package is registered with.
    @Test func theClassifierReadsAndroidJobsAsJobsOfTheirPackage() throws {
        let value = Array(Self.attestation().utf8)
        guard case .success(.job(let job)) = RecordClassifier().classify(value: value, bytes: value.count), let android = job.android else {
            Issue.record("an Android job is not classified as one")
            return
        }
        #expect(job.kind == .androidAttestation && android.packageName == Self.package)
        #expect(job.app == AppIdentity(androidPackage: Self.package) && job.app.isAndroidOnly)
        // An Apple kind spelled by an Android job's fields stays an Apple job's problem.
        let apple = Array(#"{"jobId":"x","kind":"attestation","packageName":"a.b"}"#.utf8)
        guard case .success(.invalidJob(_, _, let failure)) = RecordClassifier().classify(value: apple, bytes: apple.count) else {
            Issue.record("an Apple job with Android fields is not an invalid Apple job")
            return
        }
        #expect(failure.reason == .missingField)
    }

    @Test func anAssertionLineNeedsItsFields() {
        let line = JSONValue.object([
            ("jobId", .string("s-1")), ("kind", .string("android_assertion")), ("packageName", .string(Self.package)),
            ("keyId", .string(Base64.encode([UInt8](repeating: 1, count: 32)))), ("signature", .string("MEUC")),
            ("receivedAt", .string(Self.receivedAt.rfc3339)), ("challenge", .string("c")),
        ]).serialized()
        let json = Self.verdict(line).json
        #expect(json["jobId"] == .string("s-1"))
        #expect(json["reason"] == .string("missing_field"))
        #expect(json["message"] == .string("clientData is required"))
    }
}
