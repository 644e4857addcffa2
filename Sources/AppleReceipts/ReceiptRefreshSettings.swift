import AttestCore
import AttestVerifier
import Durations
import Foundation

/// How the worker reaches Apple's attestation-data endpoint, from the environment (CONTRACT 6): the
/// DeviceCheck key of each team whose devices are refreshed, the two endpoints, the timeouts.
public struct ReceiptRefreshSettings: Sendable {
    /// By team id; one key per team.
    public var keys: [String: DeviceCheckKey]
    public var productionURL: String
    public var developmentURL: String
    public var connectTimeout: Duration
    public var requestTimeout: Duration
    /// CA certificates (PEM) to verify the endpoint against instead of the system's: a private stand-in.
    public var caFile: String?

    /// Apple's endpoints ("Assessing fraud risk").
    public static let appleProductionURL = "https://data.appattest.apple.com/v1/attestationData"
    public static let appleDevelopmentURL = "https://data-development.appattest.apple.com/v1/attestationData"
    static let maxKeys = 256
    static let maxURLBytes = 2048
    static let maxTimeoutSeconds = 300

    /// The names this reads, with their defaults and what they accept, for the worker's list of known
    /// settings (none is secret: the keys' files are, their paths are not).
    public static let settings: [ConfigurationSetting] = [
        .init("ATTEST_DEVICECHECK_KEYS", "", .text("`TEAMID:KEYID:/path/AuthKey_KEYID.p8`, comma-separated, one per team, at most \(maxKeys)"),
              "DeviceCheck keys (unencrypted PKCS#8 P-256) for Apple's attestation-data endpoint. Empty: receipt refresh is off."),
        .init("ATTEST_RECEIPT_URL_PRODUCTION", appleProductionURL, .text("an https URL (http to a loopback host only), at most \(maxURLBytes) bytes"),
              "The attestation-data endpoint for production devices."),
        .init("ATTEST_RECEIPT_URL_DEVELOPMENT", appleDevelopmentURL, .text("an https URL (http to a loopback host only), at most \(maxURLBytes) bytes"),
              "The attestation-data endpoint for development devices."),
        .init("ATTEST_RECEIPT_CONNECT_TIMEOUT", "5", .integer(1, maxTimeoutSeconds),
              "Seconds to connect to the endpoint."),
        .init("ATTEST_RECEIPT_REQUEST_TIMEOUT", "15", .integer(1, maxTimeoutSeconds),
              "Seconds the whole exchange with the endpoint may take."),
        .init("ATTEST_RECEIPT_CA_FILE", "", .text("a PEM file, or empty"),
              "CA certificates that replace the system's for the endpoint (a private stand-in); TLS verification stays on."),
    ]

    /// The configuration problems, one message each; none quotes key material.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public var problems: [String]
        public var description: String { problems.joined(separator: "; ") }

        init(_ problem: String) { problems = [problem] }
        init(problems: [String]) { self.problems = problems }
    }

    public init(
        keys: [String: DeviceCheckKey], productionURL: String = appleProductionURL,
        developmentURL: String = appleDevelopmentURL, connectTimeout: Duration = .seconds(5),
        requestTimeout: Duration = .seconds(15), caFile: String? = nil
    ) {
        self.keys = keys
        self.productionURL = productionURL
        self.developmentURL = developmentURL
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.caFile = caFile
    }

    /// The settings in `environment` (the worker passes its merged file and environment values), or nil
    /// when `ATTEST_DEVICECHECK_KEYS` is empty: refresh is off. Every value is validated, keys read and
    /// loaded, even when refresh is off, so a typo is reported at start rather than when keys are added.
    public static func from(environment: [String: String]) throws(Invalid) -> ReceiptRefreshSettings? {
        var values = [String: String]()
        for setting in settings { values[setting.name] = environment[setting.name] ?? setting.defaultValue }
        var problems = [String]()

        func url(_ name: String) -> String {
            let value = values[name]!
            if let problem = urlProblem(value) { problems.append("\(name): \(problem)") }
            return value
        }
        func seconds(_ name: String) -> Duration {
            guard let value = Int(values[name]!), (1...maxTimeoutSeconds).contains(value) else {
                problems.append("\(name) must be a whole number of seconds from 1 to \(maxTimeoutSeconds)")
                return .seconds(1)
            }
            return .seconds(value)
        }
        let productionURL = url("ATTEST_RECEIPT_URL_PRODUCTION")
        let developmentURL = url("ATTEST_RECEIPT_URL_DEVELOPMENT")
        let connectTimeout = seconds("ATTEST_RECEIPT_CONNECT_TIMEOUT")
        let requestTimeout = seconds("ATTEST_RECEIPT_REQUEST_TIMEOUT")
        let caFile = values["ATTEST_RECEIPT_CA_FILE"]!
        if caFile.utf8.contains(0) { problems.append("ATTEST_RECEIPT_CA_FILE holds a NUL byte") }

        var keys = [String: DeviceCheckKey]()
        let entries = values["ATTEST_DEVICECHECK_KEYS"]!.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if entries.count > maxKeys {
            problems.append("ATTEST_DEVICECHECK_KEYS: at most \(maxKeys) keys")
        } else {
            for entry in entries {
                switch DeviceCheckKey.load(entry: entry) {
                case .failure(let invalid): problems += invalid.problems
                case .success(let key):
                    if keys[key.teamId] != nil {
                        problems.append("ATTEST_DEVICECHECK_KEYS: team \(key.teamId) has more than one key")
                    }
                    keys[key.teamId] = key
                }
            }
        }
        guard problems.isEmpty else { throw Invalid(problems: problems) }
        guard !keys.isEmpty else { return nil }
        return ReceiptRefreshSettings(
            keys: keys, productionURL: productionURL, developmentURL: developmentURL, connectTimeout: connectTimeout,
            requestTimeout: requestTimeout, caFile: caFile.isEmpty ? nil : caFile)
    }

    /// Why `url` cannot be an endpoint: https only, except plain http to a loopback host (a local stand-in),
    /// no user information, no control characters or spaces, bounded.
    static func urlProblem(_ url: String) -> String? {
        guard url.utf8.count <= maxURLBytes else { return "longer than \(maxURLBytes) bytes" }
        guard url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return "must be printable ASCII without spaces" }
        let lower = url.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            rest = lower.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            rest = lower.dropFirst(7)
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            let host = authority.hasPrefix("[") ? authority.prefix { $0 != "]" } + "]" : authority.prefix { $0 != ":" }
            guard ["127.0.0.1", "localhost", "[::1]"].contains(String(host)) else {
                return "plain http is only for a loopback host (127.0.0.1, localhost, [::1]); use https"
            }
        } else {
            return "must be an https URL"
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, !authority.hasPrefix(":"), !authority.hasPrefix("/") else { return "has no host" }
        guard !authority.contains("@") else { return "must not carry user information" }
        return nil
    }

    /// The endpoint serving `environment`.
    public func url(for environment: AppAttestEnvironment) -> String {
        environment == .production ? productionURL : developmentURL
    }
}
