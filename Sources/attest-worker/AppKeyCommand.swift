import AttestCLI
import AttestCore
import Foundation
import AttestJobs
import PostgresClient
import Store
import Worker

/// `attest-worker app key add|list|revoke`: the API keys that authenticate `POST /v1/challenges` for one app.
enum AppKeyCommand: Subcommand {
    static let help = """
        usage: attest-worker app key add --team T --bundle B
               attest-worker app key list --team T --bundle B [--json]
               attest-worker app key revoke --team T --bundle B --id KEY_ID

        add prints a new key once, then its id on stderr: only its SHA-256 is stored, so it cannot be shown
        again. Present it as `Authorization: Bearer KEY`; it issues challenges for this app only. An app holds
        at most \(APIKeyStore.maxActiveKeysPerApp) unrevoked keys (add the new one, deploy it, revoke the old).
        list shows ids and dates, never keys; revoke takes effect on the next request.

        \(DatabaseOptions.help)
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let teamOption = try args.option("team")
        let bundleOption = try args.option("bundle")
        let id = try args.option("id")
        let url = try DatabaseOptions.url(&args)
        let positionals = try args.positionals(max: 1)
        let app = try Arguments.app(team: teamOption, bundle: bundleOption, for: "app key")
        let (team, bundle) = (app.teamId, app.bundleId)
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: url, retryTimeout: .seconds(10)))
        switch positionals.first {
        case "add":
            do {
                let (key, keyId) = try store.addAPIKey(teamId: team, bundleId: bundle)
                print(key)
                FileHandle.standardError.write(Data("key id \(keyId) for \(team).\(bundle); the key is not shown again\n".utf8))
            } catch {
                switch error {
                case .unknownApp: throw Arguments.UsageError(description: "app \(team).\(bundle) is not registered; run attest-worker app add")
                case .tooManyKeys:
                    throw Arguments.UsageError(description: "app \(team).\(bundle) has \(APIKeyStore.maxActiveKeysPerApp) unrevoked keys; revoke one first")
                case .randomUnavailable(let failure): throw Arguments.UsageError(description: "cannot make a key: \(failure)")
                case .database(let failure): throw Arguments.UsageError(description: "cannot store the key: \(failure.description)")
                }
            }
        case "list":
            let keys = try store.apiKeys(teamId: team, bundleId: bundle)
            if json {
                print(JSONValue.array(keys.map { key in
                    .object([
                        ("id", .string(key.keyId)), ("teamId", .string(key.teamId)), ("bundleId", .string(key.bundleId)),
                        ("createdAt", .string(key.createdAt)), ("revokedAt", key.revokedAt.map(JSONValue.string) ?? .null),
                    ])
                }).serialized())
            } else {
                for key in keys { print("\(key.keyId)\tcreated=\(key.createdAt)\trevoked=\(key.revokedAt ?? "no")") }
            }
        case "revoke":
            guard let id, !id.isEmpty else { throw Arguments.UsageError(description: "app key revoke needs --id") }
            guard try store.revokeAPIKey(teamId: team, bundleId: bundle, keyId: id) else {
                throw Arguments.UsageError(description: "app \(team).\(bundle) has no unrevoked key \(id)")
            }
            print("revoked \(id)")
        default:
            throw Arguments.UsageError(description: "app key needs add, list or revoke")
        }
        return 0
    }
}
