import AppleReceipts
import AttestCLI
import AttestCore
import AttestVerifier
import Foundation
import Observability
import PostgresClient
import Store
import Worker

/// `attest-worker receipt refresh|show`: one device's fraud-risk receipt, refreshed from a shell the way the
/// worker's refresher does it (the same lease, team budget and storage), or shown with its metric history.
enum ReceiptCommand: Subcommand {
    static let help = """
        usage: attest-worker receipt refresh --key-id K [--team T --bundle B]
               attest-worker receipt show --key-id K [--metrics N]

        K is the keyId as jobs carry it (base64 of 32 bytes). refresh exchanges the device's stored receipt at
        Apple's attestation-data endpoint now, due or not, with the team's DeviceCheck key and the endpoints
        from the environment, as for run (ATTEST_DEVICECHECK_KEYS, ATTEST_RECEIPT_*, ATTEST_MAX_FUTURE_SKEW), stores a receipt that
        verifies and is fresh and scores its metric, as a
        running worker would, and prints one JSON object: the outcome, the parsed receipt, when the device is
        next due. It takes the team's request budget like the workers, and a device a worker is refreshing
        is left to it (exit 1). show prints the stored receipt's fields, its refresh state and its latest N
        metrics (default 20), as one JSON object.

        \(DatabaseOptions.help)
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        let keyIdText = try args.option("key-id")
        let team = try args.option("team")
        let bundle = try args.option("bundle")
        let metrics = try args.integer("metrics", min: 1) ?? 20
        let url = try DatabaseOptions.url(&args)
        let positionals = try args.positionals(max: 1)
        guard let keyIdText else { throw Arguments.UsageError(description: "receipt needs --key-id") }
        guard let keyId = Base64.decode(keyIdText), keyId.count == 32 else {
            throw Arguments.UsageError(description: "--key-id must be base64 of 32 bytes, as a job's keyId")
        }
        guard metrics <= 1000 else { throw Arguments.UsageError(description: "--metrics must be at most 1000") }
        switch positionals.first {
        case "show":
            let store = AttestStore(connection: PGReconnectingConnection(conninfo: url, retryTimeout: .seconds(10)))
            guard let stored = try store.storedReceipt(keyId: keyId, metrics: metrics) else { return missing(keyIdText) }
            let optional = { (text: String?) -> JSONValue in text.map(JSONValue.string) ?? .null }
            print(JSONValue.object([
                ("keyId", .string(keyIdText)), ("teamId", .string(stored.teamId)), ("bundleId", .string(stored.bundleId)),
                ("environment", .string(stored.environment)),
                ("receipt", stored.receipt.map { ReceiptFields.json(der: $0) ?? .string("unreadable") } ?? .null),
                ("refresh", .object([
                    ("nextDueAt", optional(stored.nextDueAt)), ("attempts", stored.attempts.map { .int(Int64($0)) } ?? .null),
                    ("lastStatus", optional(stored.lastStatus)), ("lastError", optional(stored.lastError)),
                    ("lastAttemptAt", optional(stored.lastAttemptAt)), ("refreshedAt", optional(stored.refreshedAt)),
                ])),
                ("metrics", stored.metrics),
            ]).serialized())
            return 0
        case "refresh":
            let environment = ProcessInfo.processInfo.environment
            let anchors = environment["ATTEST_RECEIPT_TRUST_ANCHORS"].flatMap { $0.isEmpty ? nil : $0 }
            let trust = try TrustOptions.load(attestation: nil, receipt: anchors, names: ("ATTEST_TRUST_ANCHORS", "ATTEST_RECEIPT_TRUST_ANCHORS"))
            let settings: ReceiptRefreshSettings?
            do {
                settings = try ReceiptRefreshSettings.from(environment: environment)
            } catch {
                throw Arguments.UsageError(description: error.description)
            }
            let skewName = "ATTEST_MAX_FUTURE_SKEW"
            let skewText = environment[skewName] ?? WorkerConfiguration.settings.first { $0.name == skewName }?.defaultValue ?? ""
            guard let skew = Int64(skewText), skew >= 0 else {
                throw Arguments.UsageError(description: "\(skewName) must be a whole number of seconds, 0 or more")
            }
            guard let client = ReceiptRefreshFactory.client(settings, receiptAnchor: trust.receipt.chain.anchor, skewSeconds: skew) else {
                FileHandle.standardError.write(Data("attest-worker: receipt refresh is off: no DeviceCheck key is configured\n".utf8))
                return 1
            }
            let refresher = ReceiptRefresher(
                settings: ReceiptRefresher.Settings(), conninfo: url, refresher: client,
                clock: SystemClock(), registry: MetricsRegistry(), readiness: Readiness.Conditions(), logger: Logger(level: .warning))
            let store = AttestStore(connection: PGReconnectingConnection(conninfo: url, retryTimeout: .seconds(10)))
            guard
                let device = try store.leaseRefresh(
                    keyId: keyId, teamId: team, bundleId: bundle, owner: refresher.owner, now: SystemClock().now(),
                    leaseSeconds: refresher.leaseSeconds)
            else {
                FileHandle.standardError.write(
                    Data("attest-worker: no receipt to refresh for key \(keyIdText), or a worker is refreshing it now\n".utf8))
                return 1
            }
            let report = try refresher.refresh(device, forced: true)
            var members: [(String, JSONValue)] = [
                ("keyId", .string(keyIdText)), ("outcome", .string(report.next.status.rawValue)),
                ("error", report.next.error.map(JSONValue.string) ?? .null),
            ]
            if case .refreshed(let receipt)? = report.outcome { members.append(("receipt", ReceiptFields.json(receipt))) }
            members += [("nextDueAt", .string(report.next.dueAt.rfc3339)), ("stored", .bool(report.settled))]
            print(JSONValue.object(members).serialized())
            switch report.next.status {
            case .refreshed, .notModified, .noData: return report.settled ? 0 : 1
            default: return 1
            }
        default:
            throw Arguments.UsageError(description: "receipt needs refresh or show")
        }
    }

    private static func missing(_ keyIdText: String) -> Int32 {
        FileHandle.standardError.write(Data("attest-worker: no device with key \(keyIdText)\n".utf8))
        return 1
    }
}
