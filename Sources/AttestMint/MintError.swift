import COpenSSLShims

/// Why minting failed. Minting only fails when OpenSSL refuses an operation (which points at a broken
/// environment) or when a PEM bundle handed to `TestPKI(pemBundle:)` is not one this module wrote.
public struct MintError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }

    /// An OpenSSL call failed; the message carries OpenSSL's queued errors so the cause is visible in test logs.
    static func openSSL(_ operation: String) -> MintError {
        var buffer = [CChar](repeating: 0, count: 1024)
        let count = copenssl_drain_errors(&buffer, buffer.count)
        let details = count > 0 ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "no OpenSSL error queued"
        return MintError("\(operation) failed: \(details)")
    }
}
