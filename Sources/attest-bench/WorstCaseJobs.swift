import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier

/// Jobs as message bytes for `bench core`'s per-job rows: the typical one of each kind and the most work
/// a job at the size limits can cause (ATTEST_MAX_MESSAGE_BYTES' default, VerifierLimits), so that a step
/// turning super-linear in a job's size shows as a growing ratio.
struct WorstCaseJobs {
    /// ATTEST_MAX_MESSAGE_BYTES' default.
    static let maxMessageBytes = 262_144
    /// A near-match at every position of clientData, found only at its end: the most a search can compare.
    static let challenge = String(repeating: "a", count: VerifierLimits().maxChallengeBytes - 1) + "b"

    struct Job {
        var bytes: [UInt8]
        var device: StoredDevice?
    }

    let typicalAttestation: Job
    /// The guide sample (every check runs) with its JSON padded to the limit by escapes, the parser's
    /// costliest bytes.
    let paddedAttestation: Job
    /// A maximal attestation object (a CBOR map of the most distinct keys that fit) bound to a 512-byte
    /// challenge, in a message at the limit.
    let largestObjectAttestation: Job
    let typicalAssertion: Job
    /// A valid assertion whose raw clientData fills the message and holds ``challenge`` at its end: the
    /// search, the clientData hash and the signature all run over the most bytes a job can carry.
    let largestAssertion: Job

    init() throws {
        let sample = BenchSamples.attestation
        let received = ("receivedAt", JSONValue.string(BenchSamples.attestationTime.rfc3339))
        func attestation(_ object: String, clientDataHash: String, challenge: String?, extra: [(String, JSONValue)] = []) -> [(String, JSONValue)] {
            [
                ("jobId", .string("bench-attestation")), ("kind", .string("attestation")), ("teamId", .string(sample.teamId)),
                ("bundleId", .string(sample.bundleId)), ("keyId", .string(sample.keyId)), ("attestationObject", .string(object)),
                ("clientDataHash", .string(clientDataHash)), received,
            ] + (challenge.map { [("challenge", .string($0))] } ?? []) + extra
        }
        let typical = attestation(sample.attestationObject, clientDataHash: sample.clientDataHash, challenge: sample.challenge)
        typicalAttestation = Job(bytes: Self.bytes(typical))
        paddedAttestation = Job(bytes: Self.padded(typical))

        // Distinct unsigned keys, each with the value 0, in preferred (shortest) encoding, up to the limit.
        var entries = [UInt8]()
        var count = 0
        let limit = VerifierLimits().maxAttestationObjectBytes - 3
        while case let entry = Self.cborUnsigned(UInt64(count)) + [0x00], entries.count + entry.count <= limit {
            entries += entry
            count += 1
        }
        let object = [0xb9, UInt8(count >> 8), UInt8(count & 0xff)] + entries
        let bound = Base64.encode(Digest.sha256.hash(Array(Self.challenge.utf8)))
        largestObjectAttestation = Job(bytes: Self.padded(attestation(Base64.encode(object), clientDataHash: bound, challenge: Self.challenge)))

        let assertion = BenchSamples.assertion
        guard case .hash(let hash) = assertion.clientData, let key = ECPublicKey(p256Point: Base64.decode(BenchSamples.assertionKey)!)
        else { throw BenchmarkFailure("assertion sample") }
        typicalAssertion = Job(
            bytes: Self.bytes([
                ("jobId", .string("bench-assertion")), ("kind", .string("assertion")), ("teamId", .string(assertion.teamId)),
                ("bundleId", .string(assertion.bundleId)), ("keyId", .string(assertion.keyId)), ("assertion", .string(assertion.assertion)),
                ("clientDataHash", .string(hash)), received,
            ]),
            device: StoredDevice(publicKey: key, counter: BenchSamples.assertionStoredCounter))

        let device = try Device()
        let clientData = [UInt8](repeating: UInt8(ascii: "a"), count: (Self.maxMessageBytes - 2_048) * 3 / 4 - Self.challenge.utf8.count)
            + Array(Self.challenge.utf8)
        let minted = try device.mintAssertion(
            teamId: assertion.teamId, bundleId: assertion.bundleId, clientDataHash: Digest.sha256.hash(clientData), counter: 1)
        guard let deviceKey = ECPublicKey(p256Point: device.publicKeyX962) else { throw BenchmarkFailure("minted key") }
        largestAssertion = Job(
            bytes: Self.bytes([
                ("jobId", .string("bench-assertion-largest")), ("kind", .string("assertion")), ("teamId", .string(assertion.teamId)),
                ("bundleId", .string(assertion.bundleId)), ("keyId", .string(Base64.encode(device.keyId))),
                ("assertion", .string(Base64.encode(minted.assertion))), ("clientData", .string(Base64.encode(clientData))),
                ("challenge", .string(Self.challenge)), received,
            ]),
            device: StoredDevice(publicKey: deviceKey, counter: 0))
        for job in [paddedAttestation, largestObjectAttestation, largestAssertion] where job.bytes.count > Self.maxMessageBytes {
            throw BenchmarkFailure("a worst-case job is over the message size")
        }
    }

    /// What the worker does with a job's bytes before any database work: parse, then decide.
    static func decide(_ job: Job, _ verifier: JobVerifier) -> Verdict? {
        guard let json = JSONValue.parse(job.bytes), case .success(let parsed) = AttestJobs.Job.parse(json) else { return nil }
        let key = job.device.map { AttestedKey(device: $0, environment: nil) }
        return verifier.check(parsed, JobCheckInputs(now: verifier.clock.now(), app: AppRules(environments: .production), key: key)).verdict
    }

    private static func bytes(_ members: [(String, JSONValue)]) -> [UInt8] { Array(JSONValue.object(members).serialized().utf8) }

    /// `members` plus a member of `\u00e9` escapes (six bytes each, two decoded) up to the limit. Its name is
    /// none the job knows (the job schemas admit other members): a known one such as the device metadata
    /// is refused beyond 256 bytes, the escapes are decoded all the same.
    private static func padded(_ members: [(String, JSONValue)]) -> [UInt8] {
        let base = bytes(members + [("padding", .string(""))])
        let escapes = (maxMessageBytes - base.count) / 6
        var out = Array(base.dropLast(2))  // the padding's closing quote and the object's brace
        for _ in 0..<escapes { out += Array(#"\u00e9"#.utf8) }
        return out + Array(#""}"#.utf8)
    }

    private static func cborUnsigned(_ n: UInt64) -> [UInt8] {
        switch n {
        case 0..<24: [UInt8(n)]
        case 24..<256: [0x18, UInt8(n)]
        default: [0x19, UInt8(n >> 8), UInt8(n & 0xff)]
        }
    }
}
