import AttestCore
import AttestMint
import Foundation

/// One `attest-bench apple-stand-in` process (the stand-in of Apple's attestation-data endpoint), built
/// beside attest-worker, serving receipts minted under `pki` to tokens of `keys`, answering per `script`
/// (AppleStandInScript's JSON). Killed on deinit.
final class AppleStandInProcess: @unchecked Sendable {
    let process = Process()
    let folder: URL
    let port: Int

    /// - Parameter keys: (team id, key id, PKCS#8 PEM of the DeviceCheck key; the stand-in uses its public half).
    init(pki: TestPKI, keys: [(teamId: String, keyId: String, pem: String)], script: String, maxTokenAge: Int = 3600) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("stand-in-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let pkiPath = folder.appendingPathComponent("pki.pem").path
        try pki.pemBundle().write(toFile: pkiPath, atomically: true, encoding: .utf8)
        let scriptPath = folder.appendingPathComponent("script.json").path
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        var keySpecs = [String]()
        for key in keys {
            let path = folder.appendingPathComponent("AuthKey_\(key.keyId).p8").path
            try key.pem.write(toFile: path, atomically: true, encoding: .utf8)
            keySpecs.append("\(key.teamId):\(key.keyId):\(path)")
        }
        let portFile = folder.appendingPathComponent("port").path
        process.executableURL = URL(fileURLWithPath: Stack.binary).deletingLastPathComponent().appendingPathComponent("attest-bench")
        process.arguments = [
            "apple-stand-in", "--pki", pkiPath, "--keys", keySpecs.joined(separator: ","), "--script", scriptPath,
            "--port-file", portFile, "--max-token-age", String(maxTokenAge),
        ]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        var found: Int?
        while found == nil && Date() < deadline && process.isRunning {
            found = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if found == nil { Thread.sleep(forTimeInterval: 0.05) }
        }
        guard let found else { throw WorkerProcessError(description: "the Apple stand-in did not write its port") }
        port = found
    }

    /// The endpoint URL for `path` (any path is served).
    func url(_ path: String = "/v1/attestationData") -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Per device (keyId base64): requests answered past the token check, and the most at once.
    func requests() throws -> [String: (requests: Int, maxConcurrent: Int)] {
        let result = try Stack.run("/usr/bin/curl", ["-s", url("/stand-in/requests")], capture: true)
        guard case .object(let members)? = JSONValue.parse(Array(result.output.utf8)) else { return [:] }
        var counts = [String: (requests: Int, maxConcurrent: Int)]()
        for (keyId, entry) in members {
            if case .int(let requests)? = entry["requests"], case .int(let concurrent)? = entry["maxConcurrent"] {
                counts[keyId] = (Int(requests), Int(concurrent))
            }
        }
        return counts
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: folder)
    }
}
