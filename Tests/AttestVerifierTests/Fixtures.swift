import AttestCore
import AttestJobs
import AttestVerifier
import Foundation

/// Loads the shared vectors from Tests/Fixtures by path (see Fixtures/vectors/PROVENANCE.md).
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/vectors")

    static func text(_ name: String) -> String {
        try! String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    }

    /// Every case of every .jsonl file.
    static var cases: [JSONValue] {
        let files = try! FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".jsonl") }.sorted()
        return files.flatMap { file in
            text(file).split(separator: "\n").map { JSONValue.parse(Array($0.utf8))! }
        }
    }

    static func vectorCase(_ name: String) -> JSONValue {
        cases.first { $0["name"]?.stringValue == name }!
    }

    /// The trust configuration a case names ("apple" or "test"), built once per name.
    static func trust(_ name: String) -> TrustConfiguration {
        trustConfigurations[name]!
    }

    private static let trustConfigurations: [String: TrustConfiguration] = {
        let anchors = JSONValue.parse(Array(text("trust_anchors.json").utf8))!
        var result = [String: TrustConfiguration]()
        for name in ["apple", "test"] {
            result[name] = TrustConfiguration(
                attestationAnchor: try! TrustAnchor(pem: anchors[name]!["attestationRoot"]!.stringValue!),
                receiptAnchor: try! TrustAnchor(pem: anchors[name]!["receiptRoot"]!.stringValue!))
        }
        return result
    }()

    /// The job line `Tests/cli/verify_vectors.py` builds for a case.
    static func job(for c: JSONValue) -> JSONValue {
        var m: [(String, JSONValue)] = [
            ("jobId", c["name"]!), ("kind", c["kind"]!), ("teamId", c["teamId"]!), ("bundleId", c["bundleId"]!),
            ("keyId", c["keyId"]!), ("clientDataHash", c["clientDataHash"]!), ("receivedAt", c["verifyAt"]!),
        ]
        let mode = c["clientDataHashMode"]?.stringValue
        if c["kind"]?.stringValue == "attestation" {
            if let challenge = c["challenge"], challenge != .null, mode == "sha256" || mode == "raw" {
                m.append(("challenge", challenge))
            }
            m.append(("attestationObject", c["attestationObject"]!))
        } else {
            m.append(("assertion", c["assertion"]!))
            if let key = c["storedPublicKey"], key != .null { m.append(("publicKey", key)) }
            m.append(("previousCounter", c["storedCounter"] ?? .int(0)))
        }
        return .object(m)
    }
}
