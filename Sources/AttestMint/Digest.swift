import COpenSSL

/// One-shot digests via OpenSSL. They cannot fail for in-memory input, so they do not throw.
enum Digest {
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        _ = SHA256(bytes, bytes.count, &out)
        return out
    }

    static func sha384(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 48)
        _ = SHA384(bytes, bytes.count, &out)
        return out
    }

    /// Only for subject key identifiers (RFC 5280 section 4.2.1.2 method 1).
    static func sha1(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        _ = SHA1(bytes, bytes.count, &out)
        return out
    }
}
