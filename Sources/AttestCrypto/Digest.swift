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

    /// The fetched EVP_MD, for OpenSSL calls that take one (an RSA verification's signature digest).
    var evpMD: OpaquePointer { fetched.md }

    /// The digest an ECDSA or RSA PKCS #1 v1.5 certificate signature algorithm names, or nil.
    public init?(signatureAlgorithm oid: OID) {
        switch oid {
        case .sha256WithRSAEncryption: self = .sha256
        case .sha384WithRSAEncryption: self = .sha384
        case .sha512WithRSAEncryption: self = .sha512
        default: self.init(ecdsaSignatureAlgorithm: oid)
        }
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
        FetchedDigest.sha256.hash { ctx in parts.allSatisfy { FetchedDigest.update(ctx, $0) } }
    }

    /// SHA-256 of the UTF-8 of `first ‖ separator ‖ second`, without building the String: an App ID
    /// (teamId.bundleId) hashed from its parts.
    public static func sha256(utf8 first: String, _ separator: String, _ second: String) -> [UInt8] {
        FetchedDigest.sha256.hash {
            FetchedDigest.update($0, utf8: first) && FetchedDigest.update($0, utf8: separator)
                && FetchedDigest.update($0, utf8: second)
        }
    }

    /// SHA-256(SHA-256(`first ‖ second`)): what an assertion's signature signs (its nonce, hashed again
    /// by ES256), both rounds through one context and the inner digest on the stack.
    public static func sha256OfSHA256(_ first: [UInt8], _ second: [UInt8]) -> [UInt8] {
        FetchedDigest.sha256.hash { ctx in
            guard FetchedDigest.update(ctx, first), FetchedDigest.update(ctx, second) else { return false }
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { nonce in
                EVP_DigestFinal_ex(ctx, nonce.baseAddress, nil) == 1
                    && EVP_DigestInit_ex(ctx, FetchedDigest.sha256.md, nil) == 1
                    && FetchedDigest.update(ctx, UnsafeRawBufferPointer(nonce))
            }
        }
    }
}

/// An EVP_MD fetched once and kept for the life of the process (never freed: it is a static).
/// Sendable: a fetched EVP_MD is immutable and OpenSSL 3 allows its use from any thread.
private final class FetchedDigest: @unchecked Sendable {
    static let sha256 = FetchedDigest("SHA256", size: 32)
    static let sha384 = FetchedDigest("SHA384", size: 48)
    static let sha512 = FetchedDigest("SHA512", size: 64)

    let md: OpaquePointer
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

    /// The digest of what `feed` passes to ``update(_:_:)`` on one context initialised here; `feed`
    /// returns false when an update failed.
    func hash(_ feed: (OpaquePointer) -> Bool) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("out of memory") }
        defer { EVP_MD_CTX_free(ctx) }
        var ok = EVP_DigestInit_ex(ctx, md, nil) == 1 && feed(ctx)
        return [UInt8](unsafeUninitializedCapacity: size) { out, count in
            ok = ok && EVP_DigestFinal_ex(ctx, out.baseAddress, nil) == 1
            precondition(ok, "EVP_Digest failed")
            count = size
        }
    }

    static func update(_ ctx: OpaquePointer, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { update(ctx, $0) }
    }

    static func update(_ ctx: OpaquePointer, utf8 text: String) -> Bool {
        var text = text  // withUTF8 needs a var; a native String is not copied
        return text.withUTF8 { update(ctx, UnsafeRawBufferPointer($0)) }
    }

    static func update(_ ctx: OpaquePointer, _ bytes: UnsafeRawBufferPointer) -> Bool {
        EVP_DigestUpdate(ctx, bytes.baseAddress, bytes.count) == 1
    }
}
