import AttestCLI
import AttestCore
import AttestJobs
import PostgresClient
import Store
import Worker

/// `attest-worker challenge new`: issues one challenge through the database, exactly as `POST /v1/challenges`
/// does (without its API key and rate limits: database access is the credential), for scripts and tests.
enum ChallengeCommand: Subcommand {
    static let help = """
        usage: attest-worker challenge new --team T --bundle B [--json]

        Issues a challenge for a registered app: 32 random bytes, stored in PostgreSQL, valid for 5 minutes
        from now to the receivedAt of the job that presents it, and consumed by the first such job. Prints the
        challenge (base64), or with --json {"challenge", "expiresAt", "teamId", "bundleId"}.

        \(DatabaseOptions.help)
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let team = try args.option("team")
        let bundle = try args.option("bundle")
        let url = try DatabaseOptions.url(&args)
        guard try args.positionals(max: 1) == ["new"] else { throw Arguments.UsageError(description: "challenge needs new") }
        let app = try Arguments.app(team: team, bundle: bundle, for: "challenge new")
        let issued: IssuedChallenge
        do {
            issued = try ChallengeIssuer(conninfo: url, retrySeconds: 10).issue(teamId: app.teamId, bundleId: app.bundleId)
        } catch {
            switch error {
            case .unknownApp:
                throw Arguments.UsageError(description: "app \(app.appId) is not registered; run attest-worker app add")
            case .database(let failure):
                throw Arguments.UsageError(description: "cannot issue a challenge: \(failure.description); check ATTEST_DATABASE_URL and run attest-worker migrate")
            case .randomUnavailable(let failure):
                throw Arguments.UsageError(description: "cannot issue a challenge: \(failure)")
            }
        }
        print(json ? issued.json.serialized() : issued.text)
        return 0
    }
}
