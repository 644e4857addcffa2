import AttestCLI
import AttestCore
import AttestVerifier
import Foundation

/// Trust anchors from PEM files, or Apple's pinned roots. Replacing a root is for tests and load generators
/// only, so each replacement is announced through `warn` (stderr for `verify`, the JSON log for `run`).
enum TrustOptions {
    static func load(
        attestation: String?, receipt: String?, names: (attestation: String, receipt: String) = ("--trust-anchor", "--receipt-trust-anchor"),
        warn: (String) -> Void = { FileHandle.standardError.write(Data("attest-worker: WARNING: \($0)\n".utf8)) }
    ) throws -> TrustConfiguration {
        let attestationAnchor =
            try attestation.map { try anchor(at: $0, flag: names.attestation, warn: warn) } ?? AppleRoots.appAttestationRoot
        let receiptAnchor = try receipt.map { try anchor(at: $0, flag: names.receipt, warn: warn) } ?? AppleRoots.rootCAG3
        return TrustConfiguration(attestationAnchor: attestationAnchor, receiptAnchor: receiptAnchor)
    }

    private static func anchor(at path: String, flag: String, warn: (String) -> Void) throws -> TrustAnchor {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw Arguments.UsageError(description: "\(flag): cannot read \(path)")
        }
        do {
            let anchor = try TrustAnchor(pem: text)
            warn("\(flag) replaces Apple's pinned root with \(path) (sha256 \(Hex.encode(anchor.sha256)))")
            return anchor
        } catch {
            throw Arguments.UsageError(description: "\(flag): \(path) is not a usable PEM certificate (\(error))")
        }
    }

    /// Google's pinned Android roots, or the certificates' keys in `path` (tests, load generators: announced
    /// like the Apple replacements), with the status list at `statusList` when given.
    static func android(
        anchors path: String?, statusList: String?, flag: String = "--android-trust-anchor",
        warn: (String) -> Void = { FileHandle.standardError.write(Data("attest-worker: WARNING: \($0)\n".utf8)) }
    ) throws -> AndroidTrust {
        var trust = AndroidTrust.google
        if let path {
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                throw Arguments.UsageError(description: "\(flag): cannot read \(path)")
            }
            do {
                trust = try AndroidTrust(rootCertificatesPEM: text)
            } catch {
                throw Arguments.UsageError(description: "\(flag): \(path) holds no usable PEM certificate (\(error))")
            }
            if !trust.isGoogle { warn("\(flag) replaces Google's pinned Android root keys with those of \(path)") }
        }
        if let statusList {
            guard let data = FileManager.default.contents(atPath: statusList) else {
                throw Arguments.UsageError(description: "--android-status-list: cannot read \(statusList)")
            }
            do {
                trust.statusList = try AndroidStatusList(json: Array(data))
            } catch {
                throw Arguments.UsageError(description: "--android-status-list: \(statusList): \(error)")
            }
        }
        return trust
    }
}
