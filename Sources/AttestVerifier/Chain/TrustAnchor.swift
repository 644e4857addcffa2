import AttestCore
import AttestCrypto

/// A root certificate the verifier trusts: configured, never taken from what a client sent.
public struct TrustAnchor: Sendable {
    public let certificate: Certificate
    public let key: ECPublicKey
    /// SHA-256 of the DER, as roots are pinned and logged.
    public let sha256: [UInt8]

    public enum LoadError: Error, Sendable, Equatable {
        case notAPEMCertificate
        case unparsable(String)
        case unsupportedKey
        case fingerprintMismatch(expected: String, actual: String)
    }

    public init(der: [UInt8], expectedSHA256: String? = nil) throws(LoadError) {
        let fingerprint = Digest.sha256.hash(der)
        if let expectedSHA256, Hex.encode(fingerprint) != expectedSHA256.lowercased() {
            throw .fingerprintMismatch(expected: expectedSHA256, actual: Hex.encode(fingerprint))
        }
        do {
            certificate = try Certificate(der: der)
        } catch {
            throw .unparsable("\(error)")
        }
        guard let key = ECPublicKey(subjectPublicKeyInfo: certificate.subjectPublicKeyInfo) else {
            throw .unsupportedKey
        }
        self.key = key
        sha256 = fingerprint
    }

    /// The single certificate in a PEM text.
    public init(pem: String, expectedSHA256: String? = nil) throws(LoadError) {
        guard let blocks = PEM.decodeAll(pem), blocks.count == 1 else { throw .notAPEMCertificate }
        try self.init(der: blocks[0], expectedSHA256: expectedSHA256)
    }
}
