import AttestCore
import AttestCrypto
import AttestJobs
@_spi(Benchmark) import AttestVerifier
import Foundation

/// `attest-worker bench core`: single-thread rates of the verification core next to the raw OpenSSL ECDSA
/// verify rates measured in the same run (a precomputed digest, a parsed key and one reused EVP_PKEY_CTX,
/// as `openssl speed` measures), so the ratios survive a noisy shared machine.
enum BenchCommand: Subcommand {
    static let help = """
        usage: attest-worker bench core [--json] [--seconds N] [--rounds R]

        Measures, on one thread, each for N seconds (default 1) per round, R rounds (default 5), and prints
        the median rate of each:
          raw P-384 and P-256 ECDSA verify (OpenSSL, precomputed digest, parsed key);
          attestation with a cold intermediate cache, warm with receipt verification, warm without;
          assertion with the stored key parsed once;
          whole jobs (message bytes parsed and decided), in µs per job: the typical attestation and
          assertion next to the worst at the size limits (the JSON padded to ATTEST_MAX_MESSAGE_BYTES with
          escapes, a 64 KB attestation object, 190 KB of clientData searched for a 512-byte challenge),
          with the ratio worst / typical, which a step turning super-linear in a job's size makes grow.
        Inputs are Apple's guide sample (real Apple chain and receipt) and a synthetic assertion.
        --json prints one object: {"rawP256VerifyPerSec", "rawP384VerifyPerSec",
        "attestationPerSec": {"coldCache", "warmCache", "warmCacheNoReceipt"}, "assertionPerSec",
        "jobMicroseconds": {"attestation": {"typical", "paddedAtLimit", "largestObjectAtLimit", "paddedRatio",
        "largestObjectRatio"}, "assertion": {"typical", "largestAtLimit", "largestRatio"}}}.

        attest-worker bench pipeline --help: the worker end to end on the broker and PostgreSQL.
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let seconds = try args.option("seconds").map { text -> Double in
            guard let value = Double(text), value > 0 else { throw Arguments.UsageError(description: "--seconds must be positive") }
            return value
        } ?? 1
        let rounds = try args.integer("rounds", min: 1) ?? 5
        guard try args.positionals(max: 1) == ["core"] else {
            throw Arguments.UsageError(description: "bench needs a target: core or pipeline")
        }
        let results = try CoreBenchmark(seconds: seconds).run(rounds: rounds)
        print(json ? results.json.serialized() : results.table)
        return 0
    }
}
