import AttestCore
import AttestVerifier

/// A verification job as backends publish it (CONTRACT 2; Schemas/ is the source of truth), validated field
/// by field so that a bad job gets a `job_invalid` verdict naming the field.
public struct Job: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case attestation
        case assertion
        /// Android jobs (``AndroidJob``): a key attestation chain, and a request its key signed.
        case androidAttestation = "android_attestation"
        case androidAssertion = "android_assertion"
    }

    /// What to verify, as the verification core takes it. Indirect: each case's request is boxed, so a copy
    /// of a job (the batch path binds and passes jobs by value) retains one box, not every field of it.
    public indirect enum Payload: Sendable {
        case attestation(AttestationRequest)
        case assertion(AssertionRequest)
        /// An Android job, of the app `app`: the package's own pair (``AppIdentity/init(androidPackage:)``)
        /// until the worker finds the package registered with an app (``resolvingAndroidApp(_:)``).
        case android(AndroidJob, app: AppIdentity)
    }

    public var jobId: String
    public var receivedAt: Timestamp
    public var payload: Payload
    /// Optional device metadata, passed through to the store.
    public var metadata: [String: String]
    /// Offline `verify` only: the device state a store would hold for an assertion.
    public var storedPublicKey: String?
    public var storedCounter: UInt32?
    /// Offline `verify` only: when the stored key was revoked (`revokedAt`, RFC 3339), for either kind.
    public var storedRevokedAt: Timestamp? = nil
    /// `limitedUse: true`: the backend asks for a token it will consume once (CONTRACT 7, "Tokens"); an app
    /// policy may require one for every assertion whatever this says.
    public var limitedUse = false

    public static let metadataFields = [
        "deviceId", "deviceFingerprint", "subjectId", "deviceModel", "osVersion", "appVersion", "appBuildNumber",
        "platform",
    ]

    /// Device metadata is stored, indexed (the fingerprint) and echoed in verdicts: ids and versions are
    /// short, so a longer value is the producer's mistake or an attack, refused here rather than by an index.
    public static let maxMetadataBytes = 256

    public var kind: Kind {
        switch payload {
        case .attestation: .attestation
        case .assertion: .assertion
        case .android(let job, _): job.kind
        }
    }

    public var teamId: String {
        switch payload {
        case .attestation(let r): return r.teamId
        case .assertion(let r): return r.teamId
        case .android(_, let app): return app.teamId
        }
    }

    public var bundleId: String {
        switch payload {
        case .attestation(let r): return r.bundleId
        case .assertion(let r): return r.bundleId
        case .android(_, let app): return app.bundleId
        }
    }

    /// The Android job, for Android kinds.
    public var android: AndroidJob? {
        if case .android(let job, _) = payload { return job }
        return nil
    }

    /// The job's app; valid whenever the job parsed (``AppIdentity`` says why that matters).
    public var app: AppIdentity { AppIdentity(teamId: teamId, bundleId: bundleId) }

    /// The keyId the job names; an Android attestation names none (its key is the leaf's, known once
    /// verified), and reads as empty.
    public var keyId: String {
        switch payload {
        case .attestation(let r): return r.keyId
        case .assertion(let r): return r.keyId
        case .android(let job, _): return job.keyId ?? ""
        }
    }

    /// The challenge the job presents, as issued (nil when it carries none).
    public var challenge: String? {
        switch payload {
        case .attestation(let r): return r.challenge
        case .assertion(let r): return r.challenge
        case .android(let job, _): return job.challenge
        }
    }

    /// Why a message could not be read as a job.
    public struct Invalid: Error, Sendable {
        /// The jobId when the message had one, so the verdict can be correlated.
        public var jobId: String?
        public var failure: VerificationFailure
    }

    /// Reads a job from a JSON object.
    public static func parse(_ json: JSONValue) -> Result<Job, Invalid> {
        guard case .object = json else {
            return .failure(Invalid(jobId: nil, failure: VerificationFailure(.jobInvalid, .invalidField, "job is not a JSON object")))
        }
        var fields = Fields(json: json)
        let jobId = fields.string("jobId")
        func fail(_ failure: VerificationFailure) -> Result<Job, Invalid> {
            .failure(Invalid(jobId: jobId.isEmpty ? nil : jobId, failure: failure))
        }
        if let problem = fields.problem { return fail(problem) }

        let kind: Kind
        switch json["kind"] {
        case nil, .null?:
            if json["attestationObject"] != nil {
                kind = .attestation
            } else if json["assertion"] != nil {
                kind = .assertion
            } else {
                return fail(VerificationFailure(.jobInvalid, .missingField, "attestationObject or assertion is required"))
            }
        case .string(let text)?:
            guard let parsed = Kind(rawValue: text), parsed == .attestation || parsed == .assertion else {
                return fail(VerificationFailure(.jobInvalid, .invalidField, "kind must be attestation or assertion"))
            }
            kind = parsed
        default:
            return fail(VerificationFailure(.jobInvalid, .invalidField, "kind must be a string"))
        }
        let teamId = fields.string("teamId")
        let bundleId = fields.string("bundleId")
        fields.check(teamId, AppIdentity.teamIdProblem)
        fields.check(bundleId, AppIdentity.bundleIdProblem)
        let keyId = fields.string("keyId")
        let receivedAtText = fields.string("receivedAt")
        let object = fields.string(kind == .attestation ? "attestationObject" : "assertion")
        let challenge = fields.optionalString("challenge")
        // Before anything else reads it (the worker's challenge claim, the binding search).
        if let failure = VerifierLimits().challengeFailure(challenge) { return fail(failure) }
        let payload: Payload
        if kind == .attestation {
            payload = .attestation(
                AttestationRequest(
                    teamId: teamId, bundleId: bundleId, keyId: keyId, attestationObject: object,
                    clientDataHash: fields.string("clientDataHash"), challenge: challenge))
        } else {
            let clientData: AssertionRequest.ClientData =
                json["clientDataHash"] == nil && json["clientData"] != nil
                ? .raw(fields.string("clientData")) : .hash(fields.string("clientDataHash"))
            payload = .assertion(
                AssertionRequest(
                    teamId: teamId, bundleId: bundleId, keyId: keyId, assertion: object, clientData: clientData,
                    challenge: challenge))
        }
        var metadata = [String: String]()
        for name in metadataFields {
            if let value = fields.optionalString(name, maxBytes: maxMetadataBytes) { metadata[name] = value }
        }
        let storedPublicKey = fields.optionalString("publicKey")
        let storedCounter = fields.optionalCounter("previousCounter")
        let storedRevokedAtText = fields.optionalString("revokedAt")
        let limitedUse = fields.optionalBool("limitedUse")
        if let problem = fields.problem { return fail(problem) }
        guard let receivedAt = Timestamp(rfc3339: receivedAtText) else {
            return fail(VerificationFailure(.jobInvalid, .invalidField, "receivedAt is not an RFC 3339 time"))
        }
        let storedRevokedAt = storedRevokedAtText.flatMap(Timestamp.init(rfc3339:))
        if storedRevokedAtText != nil, storedRevokedAt == nil {
            return fail(VerificationFailure(.jobInvalid, .invalidField, "revokedAt is not an RFC 3339 time"))
        }
        var job = Job(
            jobId: jobId, receivedAt: receivedAt, payload: payload, metadata: metadata,
            storedPublicKey: storedPublicKey, storedCounter: storedCounter, storedRevokedAt: storedRevokedAt)
        job.limitedUse = limitedUse ?? false
        return .success(job)
    }

    /// Collects the first field problem while reading, so parsing reads straight through.
    struct Fields {
        let json: JSONValue
        var problem: VerificationFailure? = nil

        mutating func string(_ name: String) -> String {
            switch json[name] {
            case .string(let s)? where ExactText.containsNUL(s):
                note(.invalidField, "\(name) must not contain NUL characters")
            case .string(let s)? where !s.isEmpty: return s
            case nil, .null?: note(.missingField, "\(name) is required")
            default: note(.invalidField, "\(name) must be a non-empty string")
            }
            return ""
        }

        /// Notes `problem`'s objection to a value read as present (a missing one is noted already).
        mutating func check(_ value: String, _ problem: (String) -> String?) {
            if !value.isEmpty, let message = problem(value) { note(.invalidField, message) }
        }

        mutating func optionalString(_ name: String, maxBytes: Int = .max) -> String? {
            switch json[name] {
            case nil, .null?: return nil
            case .string(let s)? where s.utf8.count > maxBytes:
                note(.invalidField, "\(name) must be at most \(maxBytes) bytes")
                return nil
            case .string(let s)? where !ExactText.containsNUL(s): return s
            default:
                note(.invalidField, "\(name) must be a string without NUL characters")
                return nil
            }
        }

        /// A JSON boolean, never a string or number read as one: a flag that changes what a token means
        /// must be exactly what the producer meant.
        mutating func optionalBool(_ name: String) -> Bool? {
            switch json[name] {
            case nil, .null?: return nil
            case .bool(let b)?: return b
            default:
                note(.invalidField, "\(name) must be true or false")
                return nil
            }
        }

        mutating func optionalCounter(_ name: String) -> UInt32? {
            switch json[name] {
            case nil, .null?: return nil
            case .int(let n)? where n >= 0 && n <= Int64(UInt32.max): return UInt32(n)
            default:
                note(.invalidField, "\(name) must be an integer from 0 to 2^32-1")
                return nil
            }
        }

        mutating func note(_ reason: FailureReason, _ message: String) {
            if problem == nil { problem = VerificationFailure(.jobInvalid, reason, message) }
        }
    }
}
