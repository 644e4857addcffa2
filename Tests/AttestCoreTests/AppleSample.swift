import Foundation

/// Apple's "Attestation Object Validation Guide" sample, read from the shared vectors fixture.
enum AppleSample {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/vectors/apple_sample.jsonl")

    /// The first case is the unmodified sample.
    static let attestationObject: String = {
        let text = try! String(contentsOf: fixture, encoding: .utf8)
        let line = text.split(separator: "\n").first!
        let json = try! JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        return json["attestationObject"] as! String
    }()
}
