import AttestCLI
import AttestCore
import AttestJobs
import AttestTokens
import Foundation

/// `attest-worker token jwks|verify`: publishes the key set for verdict tokens and checks a token the way
/// a relying party would, so operators can debug tokens without writing a client.
enum TokenCommand: Subcommand {
    static let help = """
        usage: attest-worker token jwks --key PEM [--key PEM ...]
               attest-worker token verify --jwks FILE [--audience APP_ID] [--issuer NAME] [--ignore-expiry] [--now RFC3339] TOKEN

        jwks    prints the JSON Web Key Set of the P-256 signing keys (PKCS#8 or SEC1 PEM), in the order given
                (the first is the one the worker signs with; keep retired keys listed until their last token
                has expired).
        verify  checks TOKEN (or `-` to read it from stdin) against the key set in FILE: ES256 only, a known
                kid, the signature (low-S only: the worker never signs high-S), exp/nbf (60 s leeway),
                with --audience aud (teamId.bundleId) and with --issuer iss (ATTEST_TOKEN_ISSUER).
                Prints the claims (JSON) when valid, else `invalid: REASON`, REASON one of malformed,
                alg_not_allowed, unknown_kid, signature_invalid, expired, not_yet_valid, audience_mismatch,
                issuer_mismatch.

        options:
          --now RFC3339     the clock for exp/nbf (default: the system clock)
          --ignore-expiry   skip the exp check (everything else is still checked)

        Exit status: 0 valid (or JWKS printed), 1 invalid token, 2 usage or I/O errors.
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        var keys = [String]()
        while let path = try args.option("key") { keys.append(path) }
        let jwksPath = try args.option("jwks")
        let audience = try args.option("audience")
        let issuer = try args.option("issuer")
        let now = try args.option("now")
        let ignoreExpiry = args.flag("ignore-expiry")
        let positionals = try args.positionals(max: 2)
        switch positionals.first {
        case "jwks":
            guard positionals.count == 1 else { throw Arguments.UsageError(description: "token jwks takes no arguments") }
            guard !keys.isEmpty else { throw Arguments.UsageError(description: "token jwks needs --key PEM") }
            do {
                print(try TokenSigner(pemFiles: keys).jwks.json.serialized())
            } catch {
                throw Arguments.UsageError(description: "--key: \(error)")
            }
            return 0
        case "verify":
            guard let jwksPath else { throw Arguments.UsageError(description: "token verify needs --jwks FILE") }
            guard positionals.count == 2 else { throw Arguments.UsageError(description: "token verify needs a TOKEN") }
            let verifier = TokenVerifier(jwks: try jwks(at: jwksPath), clock: try clock(now))
            let token = positionals[1] == "-" ? readToken() : positionals[1]
            do {
                print(try verifier.verify(token, audience: audience, issuer: issuer, checkExpiry: !ignoreExpiry).serialized())
                return 0
            } catch {
                print("invalid: \(error)")
                return 1
            }
        default:
            throw Arguments.UsageError(description: "token needs jwks or verify; see attest-worker token --help")
        }
    }

    private static func jwks(at path: String) throws -> JWKS {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Arguments.UsageError(description: "--jwks: cannot read \(path)")
        }
        guard let jwks = JWKS(json: Array(data)), !jwks.keys.isEmpty else {
            throw Arguments.UsageError(description: "--jwks: \(path) is not a JWKS with a P-256 key")
        }
        return jwks
    }

    private static func clock(_ now: String?) throws -> any Clock {
        guard let now else { return SystemClock() }
        guard let instant = Timestamp(rfc3339: now) else {
            throw Arguments.UsageError(description: "--now \(now) is not an RFC 3339 time")
        }
        return FixedClock(instant)
    }

    /// The first line of stdin, bounded like the verifier bounds tokens (a longer one is refused as malformed).
    private static func readToken() -> String {
        let data = FileHandle.standardInput.readData(ofLength: TokenVerifier.maxTokenBytes + 2)
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
