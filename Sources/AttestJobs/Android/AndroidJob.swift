import AttestCore
import AttestVerifier

/// An Android job as backends publish it (CONTRACT 9; Schemas/android-*-job.schema.json): the app by its
/// package name, and either the key attestation chain with its challenge or a request the attested key
/// signed, validated field by field like ``Job``.
public struct AndroidJob: Sendable {
    public enum Payload: Sendable {
        case attestation(AndroidAttestationRequest)
        case assertion(AndroidAssertionRequest)
    }

    public var jobId: String
    public var packageName: String
    public var receivedAt: Timestamp
    public var payload: Payload
    /// Optional device metadata, as on Apple jobs.
    public var metadata: [String: String]
    /// Offline `verify` only: the app's signing certificate digests standing in for its registration (nil:
    /// the line names none, and the signer is not checked).
    public var signingCertificateDigests: Set<[UInt8]>?
    /// Offline `verify` only: the attested key (SubjectPublicKeyInfo DER) a store would hold for an assertion.
    public var storedPublicKey: [UInt8]?
    /// `limitedUse: true`: the backend asks for a token it will consume once, as on Apple jobs.
    public var limitedUse = false

    /// A package name: 1 to 255 bytes of dot-separated segments, each a letter followed by letters, digits
    /// and underscores (the Android application ID rule, with one segment admitted for system packages).
    public static let maxPackageNameBytes = 255
    /// Registrations list a handful of signers (a rotation lineage at most).
    public static let maxSigningCertificateDigests = 16

    public var kind: Job.Kind {
        if case .attestation = payload { return .androidAttestation }
        return .androidAssertion
    }

    /// The keyId the job names: an assertion's; an attestation's is the leaf's, known once it is verified.
    public var keyId: String? {
        if case .assertion(let request) = payload { return request.keyId }
        return nil
    }

    /// The challenge the job presents (always present: the parser requires it).
    public var challenge: String? {
        switch payload {
        case .attestation(let request): request.challenge
        case .assertion(let request): request.challenge
        }
    }

    public static func packageNameProblem(_ name: String) -> String? {
        let problem = "packageName must be 1 to \(maxPackageNameBytes) bytes of dot-separated segments of a letter then letters, digits and _"
        guard !name.utf8.isEmpty, name.utf8.count <= maxPackageNameBytes else { return problem }
        for segment in name.utf8.split(separator: 0x2E, omittingEmptySubsequences: false) {
            guard let first = segment.first, (0x41...0x5A).contains(first) || (0x61...0x7A).contains(first),
                segment.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F })
            else { return problem }
        }
        return nil
    }

    /// Reads an Android job from a JSON object whose `kind` is `android_attestation` or `android_assertion`.
    public static func parse(_ json: JSONValue) -> Result<AndroidJob, Job.Invalid> {
        var fields = Job.Fields(json: json)
        let jobId = fields.string("jobId")
        func fail(_ failure: VerificationFailure) -> Result<AndroidJob, Job.Invalid> {
            .failure(Job.Invalid(jobId: jobId.isEmpty ? nil : jobId, failure: failure))
        }
        let isAttestation = json["kind"] == .string(Job.Kind.androidAttestation.rawValue)
        let packageName = fields.string("packageName")
        fields.check(packageName, packageNameProblem)
        let receivedAtText = fields.string("receivedAt")
        let challenge = fields.string("challenge")
        if let problem = fields.problem { return fail(problem) }
        if let failure = VerifierLimits().challengeFailure(challenge) { return fail(failure) }
        let payload: Payload
        if isAttestation {
            guard case .array(let items)? = json["certificateChain"] else {
                return fail(VerificationFailure(.jobInvalid, json["certificateChain"] == nil ? .missingField : .invalidField,
                    "certificateChain must be an array of base64 strings"))
            }
            guard items.count <= AndroidChainVerifier.maxCertificates else {
                return fail(VerificationFailure(.attestationObjectInvalid, .tooLarge,
                    "certificateChain holds more than \(AndroidChainVerifier.maxCertificates) certificates"))
            }
            var chain = [String]()
            for item in items {
                guard case .string(let text) = item else {
                    return fail(VerificationFailure(.jobInvalid, .invalidField, "certificateChain must be an array of base64 strings"))
                }
                chain.append(text)
            }
            payload = .attestation(AndroidAttestationRequest(certificateChain: chain, challenge: challenge))
        } else {
            payload = .assertion(
                AndroidAssertionRequest(
                    keyId: fields.string("keyId"), signature: fields.string("signature"), clientData: fields.string("clientData"),
                    challenge: challenge))
        }
        var metadata = [String: String]()
        for name in Job.metadataFields {
            if let value = fields.optionalString(name, maxBytes: Job.maxMetadataBytes) { metadata[name] = value }
        }
        let publicKeyText = fields.optionalString("publicKey")
        let limitedUse = fields.optionalBool("limitedUse") ?? false
        if let problem = fields.problem { return fail(problem) }
        guard let receivedAt = Timestamp(rfc3339: receivedAtText) else {
            return fail(VerificationFailure(.jobInvalid, .invalidField, "receivedAt is not an RFC 3339 time"))
        }
        var digests: Set<[UInt8]>? = nil
        switch json["signingCertificateDigests"] {
        case nil, .null?: break
        case .array(let items)? where items.count <= maxSigningCertificateDigests:
            var parsed = Set<[UInt8]>()
            for item in items {
                guard case .string(let text) = item, let digest = signingCertificateDigest(text) else {
                    return fail(VerificationFailure(.jobInvalid, .invalidField, "signingCertificateDigests must hold hex SHA-256 digests"))
                }
                parsed.insert(digest)
            }
            digests = parsed
        default:
            return fail(VerificationFailure(.jobInvalid, .invalidField,
                "signingCertificateDigests must be an array of at most \(maxSigningCertificateDigests) hex SHA-256 digests"))
        }
        var storedPublicKey: [UInt8]? = nil
        if let publicKeyText {
            guard let key = Base64.decode(publicKeyText), SubjectPublicKeyInfo.algorithm(of: key) != nil else {
                return fail(VerificationFailure(.jobInvalid, .invalidField, "publicKey is not a base64 SubjectPublicKeyInfo"))
            }
            storedPublicKey = key
        }
        return .success(
            AndroidJob(
                jobId: jobId, packageName: packageName, receivedAt: receivedAt, payload: payload, metadata: metadata,
                signingCertificateDigests: digests, storedPublicKey: storedPublicKey, limitedUse: limitedUse))
    }

    /// A SHA-256 digest as `apksigner` or `keytool` print it: 64 hex digits, either case, colons allowed.
    public static func signingCertificateDigest(_ text: String) -> [UInt8]? {
        let digits = text.utf8.count == 95 ? String(text.filter { $0 != ":" }) : text
        guard digits.utf8.count == 64 else { return nil }
        return Hex.decode(digits)
    }
}
