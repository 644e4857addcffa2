import AttestCore
internal import COpenSSL

/// One-shot message digests through libcrypto.
///
/// Each algorithm is fetched from the provider once per process (``FetchedDigest``): OpenSSL 3's `SHA256()`
/// and `EVP_sha256()` look the implementation up by name on every call, which costs as much as hashing a
/// job's few hundred bytes.
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
        data.withContiguousStorageIfAvailable { fetched.hash(UnsafeRawBufferPointer($0)) }
            ?? Array(data).withUnsafeBytes { fetched.hash($0) }
    }

    private var fetched: FetchedDigest {
        switch self {
        case .sha256: FetchedDigest.sha256
        case .sha384: FetchedDigest.sha384
        case .sha512: FetchedDigest.sha512
        }
    }

    /// SHA-256 of the concatenation of `parts`, without building the concatenation.
    public static func sha256(_ parts: [UInt8]...) -> [UInt8] {
        FetchedDigest.sha256.hash(parts)
    }
}

/// An EVP_MD fetched once and kept for the life of the process (never freed: it is a static).
/// Sendable: a fetched EVP_MD is immutable and OpenSSL 3 allows its use from any thread.
private final class FetchedDigest: @unchecked Sendable {
    static let sha256 = FetchedDigest("SHA256", size: 32)
    static let sha384 = FetchedDigest("SHA384", size: 48)
    static let sha512 = FetchedDigest("SHA512", size: 64)

    private let md: OpaquePointer
    private let size: Int

    private init(_ name: String, size: Int) {
        // The default provider always has these; without them nothing in the verifier could work.
        guard let md = EVP_MD_fetch(nil, name, nil) else { fatalError("libcrypto has no \(name)") }
        self.md = md
        self.size = size
    }

    func hash(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { out, count in
            let ok = EVP_Digest(input.baseAddress, input.count, out.baseAddress, nil, md, nil)
            precondition(ok == 1, "EVP_Digest failed")
            count = size
        }
    }

    func hash(_ parts: [[UInt8]]) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("out of memory") }
        defer { EVP_MD_CTX_free(ctx) }
        var ok = EVP_DigestInit_ex(ctx, md, nil) == 1
        for part in parts { part.withUnsafeBytes { ok = ok && EVP_DigestUpdate(ctx, $0.baseAddress, $0.count) == 1 } }
        return [UInt8](unsafeUninitializedCapacity: size) { out, count in
            ok = ok && EVP_DigestFinal_ex(ctx, out.baseAddress, nil) == 1
            precondition(ok, "EVP_Digest failed")
            count = size
        }
    }
}
