import AttestCLI
import AttestCore
import AttestJobs
import AttestTokens
import Foundation
import PostgresClient
import Store
import Worker

/// `attest-worker token jwks|verify|consume`: publishes the key set for verdict tokens, checks a token the
/// way a relying party would, and spends a limited-use token as `POST /v1/tokens/consume` does, so operators
/// and scripts can debug and use tokens without writing a client.
enum TokenCommand: Subcommand {
    static let help = """
        usage: attest-worker token jwks --key PEM [--key PEM ...]
               attest-worker token verify --jwks FILE [--audience APP_ID] [--issuer NAME] [--ignore-expiry] [--now RFC3339] TOKEN
               attest-worker token consume --jwks FILE [--audience APP_ID] [--issuer NAME] [--skew SECONDS] [database options] TOKEN

        jwks    prints the JSON Web Key Set of the P-256 signing keys (PKCS#8 or SEC1 PEM), in the order given
                (the first is the one the worker signs with; keep retired keys listed until their last token
                has expired).
        verify  checks TOKEN (or `-` to read it from stdin) against the key set in FILE: ES256 only, a known
                kid, the signature (low-S only: the worker never signs high-S), exp/nbf (60 s leeway),
                with --audience aud (teamId.bundleId) and with --issuer iss (ATTEST_TOKEN_ISSUER).
                Prints the claims (JSON) when valid, else `invalid: REASON`, REASON one of malformed,
                alg_not_allowed, unknown_kid, signature_invalid, expired, not_yet_valid, audience_mismatch,
                issuer_mismatch.
        consume spends a limited-use token once, across every worker (the consumed_tokens table), by the rules
                of POST /v1/tokens/consume: the checks of verify (always with exp, --skew seconds of leeway,
                default ATTEST_MAX_FUTURE_SKEW or 60; --issuer default ATTEST_TOKEN_ISSUER or attest-worker),
                the limitedUse claim, and with --audience the token's app (as an API key of that app would).
                Prints the claims (JSON) the first time, else `refused: CODE` with CODE one of
                token_already_consumed, forbidden, token_not_limited_use, or `invalid: REASON` as verify.

        options:
          --now RFC3339     the clock for exp/nbf (default: the system clock)
          --ignore-expiry   skip the exp check (everything else is still checked)

        database options (consume):
        \(DatabaseOptions.help)

        Exit status: 0 valid or consumed (or JWKS printed), 1 invalid or refused token, 2 usage, I/O or
        database errors.
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        var keys = [String]()
        while let path = try args.option("key") { keys.append(path) }
        let jwksPath = try args.option("jwks")
        let audience = try args.option("audience")
        let issuer = try args.option("issuer")
        let now = try args.option("now")
        let ignoreExpiry = args.flag("ignore-expiry")
        let skew = try args.option("skew")
        let databaseURL = try args.option("database-url")
        let config = try args.option("config")
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
        case "consume":
            guard let jwksPath else { throw Arguments.UsageError(description: "token consume needs --jwks FILE") }
            guard positionals.count == 2 else { throw Arguments.UsageError(description: "token consume needs a TOKEN") }
            return try consume(
                positionals[1] == "-" ? readToken() : positionals[1], jwks: try jwks(at: jwksPath), audience: audience,
                issuer: issuer, skew: skew, databaseURL: databaseURL, config: config)
        default:
            throw Arguments.UsageError(description: "token needs jwks, verify or consume; see attest-worker token --help")
        }
    }

    /// `token consume`: ``TokenConsumption`` then the ledger, as the endpoint does; an operator with the
    /// database may spend any app's token, or only `audience`'s when given.
    private static func consume(
        _ token: String, jwks: JWKS, audience: String?, issuer: String?, skew: String?, databaseURL: String?, config: String?
    ) throws -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let values = try WorkerConfiguration.values(file: config ?? environment["ATTEST_CONFIG"], environment: environment)
        guard let url = databaseURL ?? values["ATTEST_DATABASE_URL"], !url.isEmpty else {
            throw Arguments.UsageError(description: "set ATTEST_DATABASE_URL or pass --database-url")
        }
        let skewText = skew ?? values["ATTEST_MAX_FUTURE_SKEW"] ?? "60"
        guard let skewSeconds = Int64(skewText), skewSeconds >= 0 else {
            throw Arguments.UsageError(description: "--skew must be a whole number of seconds")
        }
        var consumer = TokenConsumption.Consumer.anyApp
        if let audience {
            guard let dot = audience.firstIndex(of: "."),
                let app = AppIdentity(validating: String(audience[..<dot]), String(audience[audience.index(after: dot)...]))
            else { throw Arguments.UsageError(description: "--audience must be TEAMID.bundleId") }
            consumer = .app(app)
        }
        let verifier = TokenVerifier(jwks: jwks, leewaySeconds: skewSeconds)
        let spendable: TokenConsumption.Spendable
        do {
            spendable = try TokenConsumption.admit(
                token, verifier: verifier, issuer: issuer ?? values["ATTEST_TOKEN_ISSUER"] ?? TokenSigner.defaultIssuer, consumer: consumer)
        } catch {
            switch error {
            case .invalid(let rejection): print("invalid: \(rejection)")
            case .otherApp: print("refused: forbidden")
            case .notLimitedUse: print("refused: token_not_limited_use")
            }
            return 1
        }
        let outcome: ConsumedTokenStore.Outcome
        do {
            outcome = try ConsumedTokenStore(conninfo: url, retrySeconds: 10).consume(
                app: spendable.app, jti: spendable.jti, expiresAt: spendable.expiresAt, skewSeconds: skewSeconds)
        } catch {
            throw Arguments.UsageError(description: "cannot consume the token: \(error.message)")
        }
        switch outcome {
        case .consumed:
            print(spendable.claims.serialized())
            return 0
        case .alreadyConsumed:
            print("refused: token_already_consumed")
            return 1
        case .expired:
            print("invalid: expired")
            return 1
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
