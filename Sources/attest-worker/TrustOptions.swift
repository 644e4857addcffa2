import AttestCore
import AttestVerifier
import Foundation

/// Trust anchors from command-line PEM files, or Apple's pinned roots. Replacing a root is for tests and
/// load generators only, so it is announced on stderr.
enum TrustOptions {
    static func load(attestation: String?, receipt: String?) throws -> TrustConfiguration {
        let attestationAnchor = try attestation.map { try anchor(at: $0, flag: "--trust-anchor") } ?? AppleRoots.appAttestationRoot
        let receiptAnchor = try receipt.map { try anchor(at: $0, flag: "--receipt-trust-anchor") } ?? AppleRoots.rootCAG3
        return TrustConfiguration(attestationAnchor: attestationAnchor, receiptAnchor: receiptAnchor)
    }

    private static func anchor(at path: String, flag: String) throws -> TrustAnchor {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw Arguments.UsageError(description: "\(flag): cannot read \(path)")
        }
        do {
            let anchor = try TrustAnchor(pem: text)
            FileHandle.standardError.write(
                Data("attest-worker: WARNING: \(flag) replaces Apple's pinned root with \(path) (sha256 \(Hex.encode(anchor.sha256)))\n".utf8))
            return anchor
        } catch {
            throw Arguments.UsageError(description: "\(flag): \(path) is not a usable PEM certificate (\(error))")
        }
    }
}
