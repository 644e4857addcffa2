import AttestCLI
import AttestMint
import Foundation
import PostgresClient

/// The pipeline benchmark with receipt refresh on (issue 13: verdicts are never delayed by a slow or dead
/// Apple endpoint): `--receipt-refresh-delay-seconds S` runs this executable's `apple-stand-in` as a child,
/// answering every device after S seconds; `--receipt-refresh-dead` points the worker at a closed loopback
/// port. Either way the worker gets a fresh DeviceCheck key for the bench's team and a budget far above what
/// one refresher can spend, so that it is busy with the endpoint for the whole run.
enum ReceiptRefreshBench {
    /// What the command line chose.
    enum Endpoint: Equatable {
        case slow(delaySeconds: Int)
        case dead

        /// `--receipt-refresh-delay-seconds S` (0 to the stand-in's limit) or `--receipt-refresh-dead`; nil
        /// when neither (refresh off).
        static func parse(_ args: inout Arguments) throws -> Endpoint? {
            let delay = try args.integer("receipt-refresh-delay-seconds", min: 0)
            let dead = args.flag("receipt-refresh-dead")
            switch (delay, dead) {
            case (nil, false): return nil
            case (nil, true): return .dead
            case (let seconds?, false):
                guard seconds <= AppleStandInScript.maxDelaySeconds else {
                    throw Arguments.UsageError(
                        description: "--receipt-refresh-delay-seconds: at most \(AppleStandInScript.maxDelaySeconds)")
                }
                return .slow(delaySeconds: seconds)
            case (_?, true):
                throw Arguments.UsageError(description: "--receipt-refresh-delay-seconds and --receipt-refresh-dead exclude each other")
            }
        }

        var text: String {
            switch self {
            case .slow(let seconds): "on, the endpoint answers after \(seconds) s"
            case .dead: "on, the endpoint is dead (closed port)"
            }
        }
    }

    static let keyId = "BENCHKEY01"
    /// The worker's rounds and budget: ATTEST_RECEIPT_REFRESH_PER_MINUTE at its maximum.
    static let intervalMs = 200
    static let perMinute = 60_000

    /// The endpoint as the worker reaches it: the stand-in child (killed by `stop`, or with this process),
    /// or nothing listening.
    final class Running {
        let endpoint: Endpoint
        let port: Int
        private let folder: URL
        private let keyPath: String
        private let process: Process?

        init(_ endpoint: Endpoint, pki: TestPKI, teamId: String) throws {
            self.endpoint = endpoint
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("attest-bench-stand-in-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            keyPath = folder.appendingPathComponent("AuthKey_\(ReceiptRefreshBench.keyId).p8").path
            try DeviceCheckTestKey.generatePEM().write(toFile: keyPath, atomically: true, encoding: .utf8)
            guard case .slow(let delaySeconds) = endpoint else {
                // Bound a moment ago and released: connections are refused.
                port = try WorkerScrape.freeLoopbackPort()
                process = nil
                return
            }
            let pkiPath = folder.appendingPathComponent("pki.pem").path
            try pki.pemBundle().write(toFile: pkiPath, atomically: true, encoding: .utf8)
            let scriptPath = folder.appendingPathComponent("script.json").path
            try #"{"default": [{"riskMetric": 1, "delaySeconds": \#(delaySeconds)}]}"#.write(toFile: scriptPath, atomically: true, encoding: .utf8)
            let portFile = folder.appendingPathComponent("port").path
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = [
                "--pdeathsig", "TERM", "--", URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path, "apple-stand-in",
                "--pki", pkiPath, "--keys", "\(teamId):\(ReceiptRefreshBench.keyId):\(keyPath)", "--script", scriptPath,
                "--port-file", portFile,
            ]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            self.process = process
            let deadline = Date().addingTimeInterval(20)
            var found: Int?
            while found == nil, Date() < deadline, process.isRunning {
                found = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                if found == nil { Thread.sleep(forTimeInterval: 0.05) }
            }
            guard let found else {
                process.terminate()
                try? FileManager.default.removeItem(at: folder)
                throw BenchmarkFailure("the Apple stand-in did not write its port")
            }
            port = found
        }

        /// The worker settings that turn refresh on against this endpoint (both environments).
        func workerEnvironment(teamId: String) -> [String: String] {
            let url = "http://127.0.0.1:\(port)/v1/attestationData"
            return [
                "ATTEST_DEVICECHECK_KEYS": "\(teamId):\(ReceiptRefreshBench.keyId):\(keyPath)", "ATTEST_RECEIPT_URL_PRODUCTION": url,
                "ATTEST_RECEIPT_URL_DEVELOPMENT": url, "ATTEST_RECEIPT_REFRESH_INTERVAL_MS": "\(ReceiptRefreshBench.intervalMs)",
                "ATTEST_RECEIPT_REFRESH_PER_MINUTE": "\(ReceiptRefreshBench.perMinute)",
            ]
        }

        func stop() {
            if let process, process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// `attest_receipt_refreshes_total` of a Prometheus text exposition, by outcome; lines that do not
    /// parse are skipped.
    static func refreshes(exposition: String) -> [String: Int] {
        var counts = [String: Int]()
        for sample in Exposition.samples(of: "attest_receipt_refreshes_total", in: exposition) {
            guard let outcome = Exposition.label("outcome", in: sample.labels), let value = sample.count(below: 1e15) else { continue }
            counts[outcome, default: 0] += Int(value)
        }
        return counts
    }

    /// Devices whose refresh is leased now: requests in flight.
    struct InFlight: PGOneRowStatement {
        var query: PGQuery { "SELECT count(*) AS leased FROM receipt_refresh WHERE lease_owner IS NOT NULL AND lease_expires_at > now()" }

        struct Row: PGRowDecodable {
            let leased: Int64

            init(row: PGRow) throws(PGError) { leased = try row.decode("leased") }
        }
    }
}
