internal import COpenSSL
internal import COpenSSLShims
import AttestCore
import Synchronization

/// An EC public key (P-256 or P-384) owned as an OpenSSL EVP_PKEY, which it frees on deinit.
///
/// Sendable: after construction the EVP_PKEY is only read, and OpenSSL 3 allows concurrent verifications
/// with one key as long as each uses its own EVP_PKEY_CTX. Each call copies one context initialised for
/// verification at the key's first use (`EVP_PKEY_CTX_dup` only reads its source): OpenSSL 3.0's
/// `EVP_PKEY_CTX_new` walks its whole name map and `EVP_PKEY_verify_init` fetches the algorithm, which
/// together cost more than the parsing and hashing around an assertion's one verify.
public final class ECPublicKey: @unchecked Sendable {
    private let key: OpaquePointer
    /// The initialised verification context each call copies, made at the first verification (most imported
    /// keys verify something, but an attestation's credential key does not).
    private let verifyContext = Mutex<VerifyContext?>(nil)

    /// Takes ownership of an EVP_PKEY.
    private init(owning key: OpaquePointer) {
        self.key = key
    }

    /// From a DER SubjectPublicKeyInfo; nil when OpenSSL rejects it (bad point, unsupported curve).
    /// P-256 and P-384 keys with uncompressed points (every key App Attest uses) are imported directly;
    /// anything else goes through `d2i_PUBKEY`.
    public convenience init?(subjectPublicKeyInfo der: [UInt8]) {
        let imported: OpaquePointer?
        if let curve = Self.namedCurves.first(where: {
            der.count == $0.prefix.count + $0.pointBytes && der.starts(with: $0.prefix) && der[$0.prefix.count] == 0x04
        }) {
            imported = Self.importPoint(der[curve.prefix.count...], curve: curve.parameters)
        } else {
            imported = Self.decode(der)
        }
        guard let imported else {
            ERR_clear_error()
            return nil
        }
        self.init(owning: imported)
    }

    /// From an X9.62 uncompressed P-256 point (65 bytes), as App Attest stores device keys.
    public convenience init?(p256Point point: [UInt8]) {
        guard point.count == 65, point[0] == 0x04,
            let imported = Self.importPoint(point[...], curve: Self.namedCurves[0].parameters)
        else {
            ERR_clear_error()
            return nil
        }
        self.init(owning: imported)
    }

    /// A named curve's point on a copy of the curve's parameters (the shim); nil when it is not on the curve.
    private static func importPoint(_ point: ArraySlice<UInt8>, curve: CurveParameters) -> OpaquePointer? {
        point.withUnsafeBufferPointer { copenssl_ec_public_key(curve.key, $0.baseAddress, $0.count) }
    }

    /// A parameters-only EVP_PKEY of a named curve, built once per process and only ever copied (never freed:
    /// it lives in a static). Sendable: `EVP_PKEY_dup` only reads it.
    private final class CurveParameters: @unchecked Sendable {
        let key: OpaquePointer

        init(group: String) {
            // The default provider always has both curves; without them no key could be imported at all.
            guard let key = copenssl_ec_parameters(group) else { fatalError("libcrypto has no \(group)") }
            self.key = key
        }
    }

    /// Any SubjectPublicKeyInfo OpenSSL decodes to an EC key, with nothing after it.
    private static func decode(_ der: [UInt8]) -> OpaquePointer? {
        let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let parsed = d2i_PUBKEY(nil, &cursor, buffer.count)
            guard cursor == buffer.baseAddress.map({ $0 + buffer.count }) else {
                EVP_PKEY_free(parsed)
                return nil
            }
            return parsed
        }
        guard let parsed, EVP_PKEY_get_base_id(parsed) == EVP_PKEY_EC else {
            EVP_PKEY_free(parsed)
            return nil
        }
        return parsed
    }

    /// The fixed DER header of a named-curve SubjectPublicKeyInfo before its point (uncompressed: 0x04,
    /// x, y): id-ecPublicKey with prime256v1 or secp384r1, then the BIT STRING's header.
    private static let namedCurves: [(parameters: CurveParameters, prefix: [UInt8], pointBytes: Int)] = [
        (
            CurveParameters(group: "prime256v1"),
            [
                0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
                0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
            ], 65
        ),
        (
            CurveParameters(group: "secp384r1"),
            [
                0x30, 0x76, 0x30, 0x10, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x05, 0x2b,
                0x81, 0x04, 0x00, 0x22, 0x03, 0x62, 0x00,
            ], 97
        ),
    ]

    deinit { EVP_PKEY_free(key) }

    /// Verifies a DER ECDSA signature over a precomputed digest. OpenSSL rejects non-DER encodings
    /// (it re-encodes and compares), accepts high-S values, and checks 0 < r, s < n.
    public func verify(signature: [UInt8], digest: [UInt8]) -> Bool {
        guard let template = initialisedContext(), let ctx = EVP_PKEY_CTX_dup(template.ctx) else {
            ERR_clear_error()
            return false
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        let result = EVP_PKEY_verify(ctx, signature, signature.count, digest, digest.count)
        if result != 1 { ERR_clear_error() }
        return result == 1
    }

    /// The context initialised for verification, made once; nil when OpenSSL cannot make one.
    private func initialisedContext() -> VerifyContext? {
        verifyContext.withLock { context in
            if let context { return context }
            context = VerifyContext(key: key)
            return context
        }
    }

    /// An EVP_PKEY_CTX after `EVP_PKEY_verify_init`, only ever copied (which reads it), freed on deinit.
    private final class VerifyContext: @unchecked Sendable {
        let ctx: OpaquePointer

        init?(key: OpaquePointer) {
            guard let ctx = EVP_PKEY_CTX_new(key, nil) else { return nil }
            guard EVP_PKEY_verify_init(ctx) == 1 else {
                EVP_PKEY_CTX_free(ctx)
                return nil
            }
            self.ctx = ctx
        }

        deinit { EVP_PKEY_CTX_free(ctx) }
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
