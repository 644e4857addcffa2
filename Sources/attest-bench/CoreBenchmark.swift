import AttestCLI
import AttestCore
import AttestCrypto
import AttestJobs
@_spi(Benchmark) import AttestVerifier
import Foundation
import Glibc

/// `attest-bench core`: single-thread rates of the verification core next to the raw OpenSSL ECDSA verify
/// rates measured in the same run (a precomputed digest, a parsed key and one reused EVP_PKEY_CTX, as
/// `openssl speed` measures), so the ratios survive a noisy shared machine. The measurements are
/// interleaved in short slices so that machine noise hits all of them alike.
///
/// Each raw rate verifies the very signature its path verifies, with the same key over the same digest:
/// P-384 the credential certificate's signature by the intermediate's key (the one verification a warm
/// attestation makes on that curve), P-256 the assertion's signature by its device key over
/// SHA-256(nonce). Key import is outside both sides: the raw keys are parsed once, as the warm
/// attestation's intermediate key and the assertion's stored key are (the worker keeps devices' parsed keys
/// in its DeviceCache). What the ratio leaves is our parsing, hashing and checks around the verify, plus
/// for the attestation its credential key import and the receipt (a P-256 verify and its CMS). So the warm
/// attestation with receipt is also set against both raw verifies run one after the other: the most it
/// could reach, the P-256 verify being about a tenth of the P-384 one.
struct CoreBenchmark: Subcommand {
    static let help = """
        usage: attest-bench core [--json] [--seconds N] [--rounds R]

        Measures, on one thread, each for N seconds (default 1) per round in 20 slices taken in turn with
        the others, R rounds (default 5), and prints the median rate of each, per second of the thread's
        CPU time (not wall time, which on a shared machine also counts other processes' turns on the core):
          raw P-384 and P-256 ECDSA verify (OpenSSL, precomputed digest, parsed key): the credential
            certificate's signature by the intermediate, and the assertion's signature by its device key;
            and the two one after the other, the verifies a warm attestation with receipt makes;
          attestation with a cold intermediate cache, warm with receipt verification, warm without;
          assertion with the stored key parsed once;
          whole jobs (message bytes parsed and decided), in µs per job: the typical attestation and
          assertion next to the worst at the size limits (the JSON padded to ATTEST_MAX_MESSAGE_BYTES with
          escapes, a 64 KB attestation object, 190 KB of clientData searched for a 512-byte challenge),
          with the ratio worst / typical, which a step turning super-linear in a job's size makes grow.
          Android: attestations of two real device chains (Google's EC P-384 root, its RSA root), cold (every
            signature, next to the raw verifies of the chain's signatures) and warm (the certificates above the
            leaf verified before, next to the raw verify of the leaf's signature), and an
            assertion by an attested P-256 key next to the raw P-256 verify of the same signature.
        Inputs are Apple's guide sample (real Apple chain and receipt), a synthetic assertion, real Android
        chains from Google's test data and an Android key minted for the run.
        --json prints one object: {"rawP256VerifyPerSec", "rawP384VerifyPerSec", "rawP384ThenP256PerSec",
        "attestationPerSec": {"coldCache", "warmCache", "warmCacheNoReceipt"}, "assertionPerSec",
        "jobMicroseconds": {"attestation": {"typical", "paddedAtLimit", "largestObjectAtLimit", "paddedRatio",
        "largestObjectRatio"}, "assertion": {"typical", "largestAtLimit", "largestRatio"}}, "android": {MEASURE: perSec, ...}}.

        attest-bench pipeline --help: the worker end to end on the broker and PostgreSQL.
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let seconds = try args.option("seconds").map { text -> Double in
            guard let value = Double(text), value > 0 else { throw Arguments.UsageError(description: "--seconds must be positive") }
            return value
        } ?? 1
        let rounds = try args.integer("rounds", min: 1) ?? 5
        _ = try args.positionals(max: 0)
        let results = try CoreBenchmark(seconds: seconds).run(rounds: rounds)
        print(json ? results.json.serialized() : results.table)
        return 0
    }

    let seconds: Double

    struct Results {
        var rawP256: Double
        var rawP384: Double
        /// A raw P-384 verify then a raw P-256 one, per second.
        var rawBoth: Double
        var cold: Double
        var warm: Double
        var warmNoReceipt: Double
        var assertion: Double
        /// Whole jobs (message bytes parsed and decided, warm cache) per second: the typical one of each
        /// kind and the worst at the size limits (``WorstCaseJobs``).
        var attestationJob: Double
        var paddedAttestationJob: Double
        var largestObjectAttestationJob: Double
        var assertionJob: Double
        var largestAssertionJob: Double
        /// Android (``AndroidCoreBench``): each measure's rate, by its name.
        var android: [(name: String, rate: Double)]

        var json: JSONValue {
            func micros(_ rate: Double) -> JSONValue { .double((1e7 / rate).rounded() / 10) }
            func ratio(_ worst: Double, _ typical: Double) -> JSONValue { .double((typical / worst * 100).rounded() / 100) }
            return .object([
                ("rawP256VerifyPerSec", .int(Int64(rawP256))), ("rawP384VerifyPerSec", .int(Int64(rawP384))),
                ("rawP384ThenP256PerSec", .int(Int64(rawBoth))),
                ("attestationPerSec", .object([
                    ("coldCache", .int(Int64(cold))), ("warmCache", .int(Int64(warm))),
                    ("warmCacheNoReceipt", .int(Int64(warmNoReceipt))),
                ])),
                ("assertionPerSec", .int(Int64(assertion))),
                ("android", .object(android.map { ($0.name, .int(Int64($0.rate))) })),
                ("jobMicroseconds", .object([
                    ("attestation", .object([
                        ("typical", micros(attestationJob)), ("paddedAtLimit", micros(paddedAttestationJob)),
                        ("largestObjectAtLimit", micros(largestObjectAttestationJob)),
                        ("paddedRatio", ratio(paddedAttestationJob, attestationJob)),
                        ("largestObjectRatio", ratio(largestObjectAttestationJob, attestationJob)),
                    ])),
                    ("assertion", .object([
                        ("typical", micros(assertionJob)), ("largestAtLimit", micros(largestAssertionJob)),
                        ("largestRatio", ratio(largestAssertionJob, assertionJob)),
                    ])),
                ])),
            ])
        }

        var table: String {
            func row(_ name: String, _ rate: Double, _ base: Double? = nil, _ baseName: String = "") -> String {
                let ratio = base.map { String(format: "  %.2f× raw %@", rate / $0, baseName) } ?? ""
                return name.padding(toLength: 44, withPad: " ", startingAt: 0) + String(format: "%10.0f/s", rate) + ratio
            }
            return [
                row("raw OpenSSL ECDSA P-384 verify", rawP384),
                row("raw OpenSSL ECDSA P-256 verify", rawP256),
                row("raw P-384 then P-256 verify", rawBoth, rawP384, "P-384"),
                row("attestation, cold intermediate cache", cold, rawP384, "P-384"),
                row("attestation, warm cache, with receipt", warm, rawP384, "P-384")
                    + String(format: ", %.2f× raw P-384 then P-256", warm / rawBoth),
                row("attestation, warm cache, without receipt", warmNoReceipt, rawP384, "P-384"),
                row("assertion, stored key parsed once", assertion, rawP256, "P-256"),
                "",
                "whole jobs (JSON parsed and decided), worst at the size limits next to the typical one:",
                job("attestation job, typical", attestationJob),
                job("attestation job, JSON at the limit", paddedAttestationJob, attestationJob),
                job("attestation job, 64 KB object, 512 B challenge", largestObjectAttestationJob, attestationJob),
                job("assertion job, typical", assertionJob),
                job("assertion job, 190 KB clientData, 512 B challenge", largestAssertionJob, assertionJob),
                "",
                "Android, each next to the raw OpenSSL verifies of the same keys and digests (the row above it):",
            ].joined(separator: "\n") + "\n" + android.enumerated().map { i, measure in
                i % 2 == 0 ? row(measure.name, measure.rate) : row(measure.name, measure.rate, android[i - 1].rate, "verify")
            }.joined(separator: "\n")
        }

        /// µs per job, and for a worst case how many typical jobs it costs.
        private func job(_ name: String, _ rate: Double, _ typical: Double? = nil) -> String {
            let ratio = typical.map { String(format: "  %.2f× typical", $0 / rate) } ?? ""
            return name.padding(toLength: 52, withPad: " ", startingAt: 0) + String(format: "%10.1f µs", 1e6 / rate) + ratio
        }
    }

    func run(rounds: Int) throws -> Results {
        let sample = BenchSamples.attestation
        let at = BenchSamples.attestationTime
        let object = try AttestationObject(cbor: Base64.decode(sample.attestationObject)!)
        let leaf = try Certificate(der: object.certificates[0])
        let intermediate = try Certificate(der: object.certificates[1])
        guard case .hash(let clientDataHash) = BenchSamples.assertion.clientData,
            let assertionObject = try? AssertionObject(cbor: Base64.decode(BenchSamples.assertion.assertion)!),
            let p384 = ECPublicKey(subjectPublicKeyInfo: intermediate.subjectPublicKeyInfo)?.makeReusableVerifier(),
            let assertionKey = ECPublicKey(p256Point: Base64.decode(BenchSamples.assertionKey)!),
            let p256 = assertionKey.makeReusableVerifier(),
            let p384Digest = Digest(ecdsaSignatureAlgorithm: leaf.signatureAlgorithm)?.hash(leaf.tbsBytes)
        else { throw BenchmarkFailure("cannot load the sample keys") }
        let p256Digest = Digest.sha256.hash(Digest.sha256(assertionObject.authenticatorData, Base64.decode(clientDataHash)!))

        let warmVerifier = AttestationVerifier(trust: .apple)
        let assertions = AssertionVerifier()
        let device = StoredDevice(publicKey: assertionKey, counter: BenchSamples.assertionStoredCounter)
        let jobs = try WorstCaseJobs()
        let jobVerifier = JobVerifier(trust: .apple, clock: FixedClock(at))
        let android = try AndroidCoreBench()
        // Every measured operation must succeed, or the rates would describe a failure path.
        guard p384.verify(signature: leaf.signature, digest: p384Digest),
            p256.verify(signature: assertionObject.signature, digest: p256Digest),
            case .success = warmVerifier.verify(sample, policy: .production, at: at),
            warmVerifier.verifyWithoutReceipt(sample, policy: .production, at: at) == nil,
            case .success = assertions.verify(BenchSamples.assertion, device: device),
            // The largest object is refused after its whole CBOR is read; every other job is accepted.
            [jobs.typicalAttestation, jobs.paddedAttestation, jobs.typicalAssertion, jobs.largestAssertion].allSatisfy({
                WorstCaseJobs.decide($0, jobVerifier)?.ok == true
            }),
            WorstCaseJobs.decide(jobs.largestObjectAttestation, jobVerifier)?.failure?.code == .attestationObjectInvalid
        else { throw BenchmarkFailure("a benchmark input does not verify") }

        let measures: [() -> Void] = [
            { _ = p256.verify(signature: assertionObject.signature, digest: p256Digest) },
            { _ = p384.verify(signature: leaf.signature, digest: p384Digest) },
            { _ = AttestationVerifier(trust: .apple).verify(sample, policy: .production, at: at) },
            { _ = warmVerifier.verify(sample, policy: .production, at: at) },
            { _ = warmVerifier.verifyWithoutReceipt(sample, policy: .production, at: at) },
            { _ = assertions.verify(BenchSamples.assertion, device: device) },
            {
                _ = p384.verify(signature: leaf.signature, digest: p384Digest)
                _ = p256.verify(signature: assertionObject.signature, digest: p256Digest)
            },
        ] + [jobs.typicalAttestation, jobs.paddedAttestation, jobs.largestObjectAttestation, jobs.typicalAssertion,
            jobs.largestAssertion].map { job in { _ = WorstCaseJobs.decide(job, jobVerifier) } } + android.measures.map(\.body)
        var samples = [[Double]](repeating: [], count: measures.count)
        for _ in 0..<rounds {
            // Each round cycles through the measures in short slices, so that a burst of load on the machine
            // falls on all of them alike rather than on whichever ran during it.
            var totals = [(count: Int, cpuNanoseconds: UInt64)](repeating: (0, 0), count: measures.count)
            for _ in 0..<Self.slicesPerRound {
                for (i, body) in measures.enumerated() {
                    let (count, cpu) = run(body, for: seconds / Double(Self.slicesPerRound))
                    totals[i].count += count
                    totals[i].cpuNanoseconds += cpu
                }
            }
            for (i, total) in totals.enumerated() { samples[i].append(Double(total.count) / (Double(total.cpuNanoseconds) / 1e9)) }
        }
        let m = samples.map(Self.median)
        return Results(
            rawP256: m[0], rawP384: m[1], rawBoth: m[6], cold: m[2], warm: m[3], warmNoReceipt: m[4], assertion: m[5],
            attestationJob: m[7], paddedAttestationJob: m[8], largestObjectAttestationJob: m[9], assertionJob: m[10],
            largestAssertionJob: m[11], android: zip(android.measures, m[12...]).map { ($0.name, $1) })
    }

    /// Slices each measure gets per round.
    private static let slicesPerRound = 20

    /// Runs `body` in batches until `seconds` of wall time have passed; returns how many times it ran and
    /// the CPU time this thread spent, so that rates are per CPU second: on a shared machine wall time also
    /// counts the time other processes held the core.
    private func run(_ body: () -> Void, for seconds: Double) -> (count: Int, cpuNanoseconds: UInt64) {
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + UInt64(seconds * 1e9)
        let cpuStart = Self.threadCPUNanoseconds()
        var count = 0
        var now = start
        var batch = 1
        while now < deadline {
            for _ in 0..<batch { body() }
            count += batch
            now = DispatchTime.now().uptimeNanoseconds
            if batch < 64 { batch *= 2 }
        }
        return (count, Self.threadCPUNanoseconds() - cpuStart)
    }

    /// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
    static func threadCPUNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
