import AttestCLI
import AttestCore
import AttestJobs
import Foundation
import PostgresClient
import Store
import Worker

/// `attest-worker device show|revoke`: one attested key's device, and the operator's revocation of it.
enum DeviceCommand: Subcommand {
    static let help = """
        usage: attest-worker device show --key-id K [--team T --bundle B] [--json]
               attest-worker device revoke --key-id K --team T --bundle B [--reason TEXT]

        K is the keyId as jobs carry it (base64 of 32 bytes). show prints the stored device: app, deviceId,
        environment, counter, attested-at, last seen, its risk state and whether the key is revoked.
        revoke makes the key's later assertions, and its attestation sent again, reattest_required/key_revoked
        (the device must attest a new key); every running worker applies it from its next batch. Revoking
        a revoked key changes nothing. --reason (at most \(DeviceAdministration.maxReasonBytes) bytes) is kept with it.

          --json                 show: one JSON object (null members for what is not known)

        \(DatabaseOptions.help)
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let keyIdText = try args.option("key-id")
        let team = try args.option("team")
        let bundle = try args.option("bundle")
        let reason = try args.option("reason")
        let url = try DatabaseOptions.url(&args)
        let positionals = try args.positionals(max: 1)
        guard let keyIdText else { throw Arguments.UsageError(description: "device needs --key-id") }
        guard let keyId = Base64.decode(keyIdText), keyId.count == 32 else {
            throw Arguments.UsageError(description: "--key-id must be base64 of 32 bytes, as a job's keyId")
        }
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: url, retryTimeout: .seconds(10)))
        switch positionals.first {
        case "show":
            let app = team == nil && bundle == nil ? nil : try Arguments.app(team: team, bundle: bundle, for: "device show")
            guard let device = try store.device(keyId: keyId, app: app) else {
                FileHandle.standardError.write(Data("attest-worker: no device with key \(keyIdText)\(app.map { " in \($0.appId)" } ?? "")\n".utf8))
                return 1
            }
            if json {
                print(device.json.serialized())
            } else {
                let risk = device.riskScore.map { "\($0) (\(device.riskCategory ?? "?"))" } ?? "not scored"
                for (name, value) in [
                    ("key id", keyIdText), ("app", device.app.appId), ("device id", device.deviceId),
                    ("fingerprint", device.fingerprint ?? "-"), ("environment", device.environment),
                    ("counter", String(device.counter)), ("attested at", device.attestedAt), ("last seen at", device.lastSeenAt),
                    ("attestations", String(device.attestations)), ("assertions", String(device.assertions)), ("risk", risk),
                    ("revoked at", device.revokedAt ?? "no"), ("revoked reason", device.revokedReason ?? "-"),
                ] {
                    print(name.padding(toLength: 16, withPad: " ", startingAt: 0) + value)
                }
            }
        case "revoke":
            let app = try Arguments.app(team: team, bundle: bundle, for: "device revoke")
            if let reason, reason.utf8.count > DeviceAdministration.maxReasonBytes || reason.utf8.contains(0) {
                throw Arguments.UsageError(description: "--reason must be at most \(DeviceAdministration.maxReasonBytes) bytes, without NUL")
            }
            switch try store.revokeDevice(keyId: keyId, app: app, reason: reason, at: SystemClock().now()) {
            case .revoked: print("revoked \(keyIdText) in \(app.appId)")
            case .alreadyRevoked(let at): print("\(keyIdText) in \(app.appId) was revoked at \(at)")
            case .unknown:
                FileHandle.standardError.write(Data("attest-worker: no device with key \(keyIdText) in \(app.appId)\n".utf8))
                return 1
            }
        default:
            throw Arguments.UsageError(description: "device needs show or revoke")
        }
        return 0
    }
}
