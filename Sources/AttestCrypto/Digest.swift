import AttestCore
internal import COpenSSL

/// One-shot message digests through libcrypto.
public enum Digest: Sendable {
    case sha256, sha384, sha512

    /// The digest an ECDSA signature algorithm OID names, or nil for any other algorithm.
    public init?(ecdsaSignatureAlgorithm oid: OID) {
        switch oid {
        case .ecdsaWithSHA256: self = .sha256
        case .ecdsaWithSHA384: self = .sha384
        case .ecdsaWithSHA512: self = .sha512
        default: return nil
        }
    }

    public func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        data.withContiguousStorageIfAvailable { digest(UnsafeRawBufferPointer($0)) }
            ?? Array(data).withUnsafeBytes { digest($0) }
    }

    private func digest(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        switch self {
        case .sha256:
            return [UInt8](unsafeUninitializedCapacity: 32) { out, count in
                SHA256(input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, out.baseAddress)
                count = 32
            }
        case .sha384:
            return [UInt8](unsafeUninitializedCapacity: 48) { out, count in
                SHA384(input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, out.baseAddress)
                count = 48
            }
        case .sha512:
            return [UInt8](unsafeUninitializedCapacity: 64) { out, count in
                SHA512(input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, out.baseAddress)
                count = 64
            }
        }
    }

    /// SHA-256 of the concatenation of `parts`, without building the concatenation.
    public static func sha256(_ parts: [UInt8]...) -> [UInt8] {
        let ctx = EVP_MD_CTX_new()!
        defer { EVP_MD_CTX_free(ctx) }
        EVP_DigestInit_ex(ctx, EVP_sha256(), nil)
        for part in parts { part.withUnsafeBytes { _ = EVP_DigestUpdate(ctx, $0.baseAddress, $0.count) } }
        var out = [UInt8](repeating: 0, count: 32)
        EVP_DigestFinal_ex(ctx, &out, nil)
        return out
    }
}
