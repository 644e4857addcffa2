internal import COpenSSL
import AttestCore

/// An EC public key (P-256 or P-384) owned as an OpenSSL EVP_PKEY, which it frees on deinit.
///
/// Sendable: after construction the EVP_PKEY is only read, and OpenSSL 3 allows concurrent verifications
/// with one key as long as each uses its own EVP_PKEY_CTX (created per call here).
public final class ECPublicKey: @unchecked Sendable {
    private let key: OpaquePointer

    /// From a DER SubjectPublicKeyInfo; nil when OpenSSL rejects it (bad point, unsupported curve).
    public init?(subjectPublicKeyInfo der: [UInt8]) {
        var parsed: OpaquePointer? = nil
        der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            parsed = d2i_PUBKEY(nil, &cursor, buffer.count)
            if parsed != nil && cursor != buffer.baseAddress.map({ $0 + buffer.count }) {
                EVP_PKEY_free(parsed)
                parsed = nil
            }
        }
        guard let parsed, EVP_PKEY_get_base_id(parsed) == EVP_PKEY_EC else {
            EVP_PKEY_free(parsed)
            ERR_clear_error()
            return nil
        }
        key = parsed
    }

    /// From an X9.62 uncompressed P-256 point (65 bytes), as App Attest stores device keys.
    public convenience init?(p256Point point: [UInt8]) {
        guard point.count == 65, point[0] == 0x04 else { return nil }
        self.init(subjectPublicKeyInfo: Self.p256SPKIPrefix + point)
    }

    deinit { EVP_PKEY_free(key) }

    /// The fixed DER header of a P-256 SubjectPublicKeyInfo before the 65-byte point.
    private static let p256SPKIPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
        0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// Verifies a DER ECDSA signature over a precomputed digest. OpenSSL rejects non-DER encodings
    /// (it re-encodes and compares), accepts high-S values, and checks 0 < r, s < n.
    public func verify(signature: [UInt8], digest: [UInt8]) -> Bool {
        guard let ctx = EVP_PKEY_CTX_new(key, nil) else { return false }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_verify_init(ctx) == 1 else {
            ERR_clear_error()
            return false
        }
        let result = EVP_PKEY_verify(ctx, signature, signature.count, digest, digest.count)
        if result != 1 { ERR_clear_error() }
        return result == 1
    }

    /// Verifies a signature over `message` hashed with `digest`.
    public func verify(signature: [UInt8], message: some Collection<UInt8>, digest: Digest) -> Bool {
        verify(signature: signature, digest: digest.hash(message))
    }

    /// A verifier that keeps one initialised EVP_PKEY_CTX, as `openssl speed` does: the baseline that
    /// benchmarks compare against. Not thread-safe; one per thread.
    public func makeReusableVerifier() -> ReusableVerifier? { ReusableVerifier(key: key, owner: self) }

    public final class ReusableVerifier {
        private let ctx: OpaquePointer
        private let owner: ECPublicKey

        fileprivate init?(key: OpaquePointer, owner: ECPublicKey) {
            guard let ctx = EVP_PKEY_CTX_new(key, nil), EVP_PKEY_verify_init(ctx) == 1 else { return nil }
            self.ctx = ctx
            self.owner = owner
        }

        deinit { EVP_PKEY_CTX_free(ctx) }

        public func verify(signature: [UInt8], digest: [UInt8]) -> Bool {
            EVP_PKEY_verify(ctx, signature, signature.count, digest, digest.count) == 1
        }
    }
}
