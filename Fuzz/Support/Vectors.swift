import AttestCore
import AttestCrypto
import AttestJobs
import AttestVerifier
import Foundation

/// The shared vectors (Tests/Fixtures/vectors), found from this file's path as the tests find them, so a
/// fuzz binary runs from any working directory of this checkout. Loaded once, on first use.
enum Vectors {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Tests/Fixtures/vectors")

    /// The case called `name` in any of the .jsonl files.
    ///
    /// Keep what a target needs from it as plain values, never the `JSONValue` itself in a global:
    /// Swift stores an indirect enum's case in spare bits of the box pointer, which LeakSanitizer then
    /// does not recognise as a reference, so it would report the whole value as leaked at exit.
    static func vectorCase(_ name: String) -> JSONValue {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for file in files.sorted() where file.hasSuffix(".jsonl") {
            for line in text(file).split(separator: "\n") {
                if let c = JSONValue.parse(Array(line.utf8)), c["name"]?.stringValue == name { return c }
            }
        }
        fatalError("no vector case \(name) in \(directory.path)")
    }

    /// A text field of a case, or of an object inside one.
    static func field(_ object: JSONValue?, _ name: String) -> String {
        guard let value = object?[name]?.stringValue else { fatalError("vector case lacks \(name)") }
        return value
    }

    /// A base64 field, decoded.
    static func bytes(_ object: JSONValue?, _ name: String) -> [UInt8] {
        guard let bytes = Base64.decode(field(object, name)) else { fatalError("\(name) is not base64") }
        return bytes
    }

    /// The `verifyAt` of a case: the instant every validity period is checked against.
    static func time(_ c: JSONValue) -> Timestamp {
        guard let time = Timestamp(rfc3339: field(c, "verifyAt")) else { fatalError("bad verifyAt") }
        return time
    }

    /// The "test" anchors of trust_anchors.json: the roots the synthetic vectors chain to.
    static let testAnchors: (attestation: TrustAnchor, receipt: TrustAnchor) = {
        guard let anchors = JSONValue.parse(Array(text("trust_anchors.json").utf8)),
            let attestation = anchors["test"]?["attestationRoot"]?.stringValue,
            let receipt = anchors["test"]?["receiptRoot"]?.stringValue
        else { fatalError("trust_anchors.json lacks the test roots") }
        do {
            return (try TrustAnchor(pem: attestation), try TrustAnchor(pem: receipt))
        } catch {
            fatalError("test root: \(error)")
        }
    }()

    /// A trust configuration under the test anchors with empty issuer caches: a fresh one per input keeps
    /// every run independent of the inputs before it (a cached intermediate would skip its checks).
    static func freshTestTrust() -> TrustConfiguration {
        TrustConfiguration(attestationAnchor: testAnchors.attestation, receiptAnchor: testAnchors.receipt)
    }

    private static func text(_ name: String) -> String {
        do {
            return try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
        } catch {
            fatalError("cannot read \(name): \(error)")
        }
    }
}
