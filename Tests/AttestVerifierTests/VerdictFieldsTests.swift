import AttestCore
import AttestJobs
import AttestMint
import AttestVerifier
import Testing

/// The members a verdict echoes from its job (subjectId, receivedAt, the analytics metadata) and its
/// schemaVersion: present exactly when the job gave them, in a fixed order, so equal jobs give equal bytes.
@Suite struct VerdictFieldsTests {
    typealias F = MintFixture

    /// Built per use, not a stored global: LeakSanitizer reports a global array of JSON values as leaked.
    static var metadata: [(String, JSONValue)] {
        [
            ("platform", .string("iOS")), ("appBuildNumber", .string("210")), ("subjectId", .string("user-42")),
            ("deviceModel", .string("iPhone15,2")), ("osVersion", .string("17.4")), ("appVersion", .string("2.1.0")),
        ]
    }

    static func job(_ extra: [(String, JSONValue)] = [], receivedAt: Timestamp = F.time) -> JSONValue {
        .object(
            [
                ("jobId", .string("job-1")), ("teamId", .string(F.teamId)), ("bundleId", .string(F.bundleId)),
                ("keyId", .string(Base64.encode(F.device.keyId))),
                ("attestationObject", .string(Base64.encode(F.mint().attestationObject))),
                ("clientDataHash", .string(Base64.encode(F.clientDataHash))), ("challenge", .string(F.challenge)),
                ("receivedAt", .string(receivedAt.rfc3339)),
            ] + extra)
    }

    static func decide(_ json: JSONValue) -> JSONValue {
        let verifier = JobVerifier(trust: F.trust, clock: FixedClock(F.time))
        switch Job.parse(json) {
        case .failure(let invalid): return verifier.rejection(jobId: invalid.jobId, invalid.failure).json
        case .success(let job):
            return verifier.check(job, JobCheckInputs(now: F.time, app: AppRules(environments: .production))).verdict.json
        }
    }

    static func names(_ verdict: JSONValue) -> [String] {
        guard case .object(let members) = verdict else { return [] }
        return members.map(\.0)
    }

    @Test func acceptedVerdictEchoesTheJobsSubjectAndMetadata() {
        let v = Self.decide(Self.job(Self.metadata))
        #expect(v["ok"] == .bool(true))
        #expect(v["schemaVersion"] == .int(Verdict.schemaVersion))
        #expect(v["subjectId"] == .string("user-42"))
        #expect(v["receivedAt"] == .string(F.time.rfc3339))
        #expect(v["deviceModel"] == .string("iPhone15,2"))
        #expect(v["osVersion"] == .string("17.4"))
        #expect(v["appVersion"] == .string("2.1.0"))
        #expect(v["appBuildNumber"] == .string("210"))
        #expect(v["platform"] == .string("iOS"))
        // The verdict's order, whatever the job's.
        let order = Self.names(v).filter { Verdict.analyticsFields.contains($0) }
        #expect(order == Verdict.analyticsFields)
    }

    @Test func rejectedVerdictOfAReadableJobEchoesThemToo() {
        let v = Self.decide(Self.job(Self.metadata + [("kind", .string("attestation"))]).replacing("clientDataHash", .string("%%%")))
        #expect(v["ok"] == .bool(false))
        #expect(v["subjectId"] == .string("user-42"))
        #expect(v["receivedAt"] == .string(F.time.rfc3339))
        #expect(v["platform"] == .string("iOS"))
    }

    @Test func absentWhenTheJobHasNone() {
        let v = Self.decide(Self.job())
        #expect(v["ok"] == .bool(true))
        #expect(v["schemaVersion"] == .int(Verdict.schemaVersion))
        for name in ["subjectId"] + Verdict.analyticsFields { #expect(v[name] == nil, "\(name)") }
        #expect(v["receivedAt"] == .string(F.time.rfc3339))
        // null metadata is absent metadata.
        let nulls = Self.decide(Self.job(Self.metadata.map { ($0.0, .null) }))
        for name in ["subjectId"] + Verdict.analyticsFields { #expect(nulls[name] == nil, "\(name)") }
    }

    /// A job that could not be read has no receivedAt nor metadata to echo, only the schema version.
    @Test func unreadableJobHasOnlyTheSchemaVersion() {
        let v = Self.decide(.object(Self.metadata + [("jobId", .string("job-1"))]))
        #expect(v["ok"] == .bool(false))
        #expect(v["code"] == .string("job_invalid"))
        #expect(v["schemaVersion"] == .int(Verdict.schemaVersion))
        for name in ["subjectId", "receivedAt"] + Verdict.analyticsFields { #expect(v[name] == nil, "\(name)") }
    }

    /// Metadata is read as a job's field: over its bound or not a string, the job is refused naming it and
    /// nothing of it is echoed.
    @Test func unboundedMetadataIsRefusedNotEchoed() {
        for name in ["subjectId"] + Verdict.analyticsFields {
            for bad: JSONValue in [.string(String(repeating: "a", count: Job.maxMetadataBytes + 1)), .int(3), .object([])] {
                let v = Self.decide(Self.job([(name, bad)]))
                #expect(v["reason"] == .string("invalid_field"), "\(name)")
                #expect(v[name] == nil, "\(name)")
            }
        }
    }

    /// The same job decided twice gives the same bytes (a redelivery's verdict matches the stored one).
    @Test func equalJobsGiveEqualBytes() {
        let first = Self.decide(Self.job(Self.metadata)).serialized()
        let again = Self.decide(Self.job(Self.metadata)).serialized()
        #expect(first == again)
        #expect(first.contains(#""ok":true,"schemaVersion":4,"subjectId":"user-42""#))
    }
}

extension JSONValue {
    /// The object with member `name`'s value replaced.
    fileprivate func replacing(_ name: String, _ value: JSONValue) -> JSONValue {
        guard case .object(let members) = self else { return self }
        return .object(members.map { $0.0 == name ? (name, value) : $0 })
    }
}
