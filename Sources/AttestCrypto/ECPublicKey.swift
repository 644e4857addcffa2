internal import COpenSSL
internal import COpenSSLShims
import AttestCore
import Synchronization

/// An EC public key (P-256 or P-384), imported into OpenSSL as an EVP_PKEY, which it frees on deinit.
///
/// A point on a named curve is checked against the curve at init (on a group shared per curve) and becomes
/// an EVP_PKEY at its first verification: an attestation's credential key must be a valid point but is
/// never used to verify there, and every new EVP_PKEY walks OpenSSL 3.0's whole name map.
///
/// Sendable: after import the EVP_PKEY is only read, and OpenSSL 3 allows concurrent verifications with
/// one key as long as each uses its own EVP_PKEY_CTX. Each call copies one context initialised for
/// verification at the import (`EVP_PKEY_CTX_dup` only reads its source): `EVP_PKEY_CTX_new` walks the name
/// map too and `EVP_PKEY_verify_init` fetches the algorithm, together more than the parsing and hashing
/// around an assertion's one verify.
public final class ECPublicKey: @unchecked Sendable {
    /// Where the EVP_PKEY comes from.
    private enum Source {
        /// An uncompressed point already checked to lie on the curve, imported at the first verification.
        case point(CurveParameters, [UInt8])
        /// A key `d2i_PUBKEY` decoded, one reference owned here.
        case decoded(OpaquePointer)
    }

    private let source: Source
    /// The imported key and its initialised context, made at the first verification.
    private let imported = Mutex<Imported?>(nil)

    private init(_ source: Source) {
        self.source = source
    }

    /// From a DER SubjectPublicKeyInfo; nil when OpenSSL rejects it (bad point, unsupported curve).
    /// P-256 and P-384 keys with uncompressed points (every key App Attest uses) are checked on their curve
    /// directly; anything else goes through `d2i_PUBKEY`.
    public convenience init?(subjectPublicKeyInfo der: [UInt8]) {
        if let curve = Self.namedCurves.first(where: {
            der.count == $0.prefix.count + $0.pointBytes && der.starts(with: $0.prefix) && der[$0.prefix.count] == 0x04
        }) {
            self.init(point: Array(der[curve.prefix.count...]), on: curve.parameters)
        } else {
            guard let decoded = Self.decode(der) else {
                ERR_clear_error()
                return nil
            }
            self.init(.decoded(decoded))
        }
    }

    /// From an X9.62 uncompressed P-256 point (65 bytes), as App Attest stores device keys.
    public convenience init?(p256Point point: [UInt8]) {
        guard point.count == 65, point[0] == 0x04 else { return nil }
        self.init(point: point, on: Self.namedCurves[0].parameters)
    }

    /// A point on a named curve; nil when it is not on the curve (the check the import makes again).
    private convenience init?(point: [UInt8], on curve: CurveParameters) {
        guard point.withUnsafeBufferPointer({ copenssl_ec_point_is_on_curve(curve.group, $0.baseAddress, $0.count) }) == 1 else {
            ERR_clear_error()
            return nil
        }
        self.init(.point(curve, point))
    }

    /// A named curve: its group, shared for point checks (which only read it), and a parameters-only
    /// EVP_PKEY that imports copy. Built once per process and never freed (they live in a static).
    private final class CurveParameters: @unchecked Sendable {
        let group: OpaquePointer
        let key: OpaquePointer

        init(group name: String) {
            // The default provider always has both curves; without them no key could be imported at all.
            guard let group = copenssl_ec_group(name), let key = copenssl_ec_parameters(name) else {
                fatalError("libcrypto has no \(name)")
            }
            self.group = group
            self.key = key
        }
    }

    /// The EVP_PKEY (one reference owned) and a context initialised for verification from it.
    private final class Imported: @unchecked Sendable {
        let key: OpaquePointer
        let context: OpaquePointer

        init?(owning key: OpaquePointer) {
            guard let context = EVP_PKEY_CTX_new(key, nil) else {
                EVP_PKEY_free(key)
                return nil
            }
            guard EVP_PKEY_verify_init(context) == 1 else {
                EVP_PKEY_CTX_free(context)
                EVP_PKEY_free(key)
                return nil
            }
            self.key = key
            self.context = context
        }

        deinit {
            EVP_PKEY_CTX_free(context)
            EVP_PKEY_free(key)
        }
    }

    /// The key imported into OpenSSL, made once; nil when OpenSSL cannot make it.
    private func importedKey() -> Imported? {
        imported.withLock { imported in
            if let imported { return imported }
            let key: OpaquePointer?
            switch source {
            case .point(let curve, let point):
                key = point.withUnsafeBufferPointer { copenssl_ec_public_key(curve.key, $0.baseAddress, $0.count) }
            case .decoded(let decoded):
                key = EVP_PKEY_up_ref(decoded) == 1 ? decoded : nil
            }
            imported = key.flatMap { Imported(owning: $0) }
            return imported
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

    deinit {
        if case .decoded(let key) = source { EVP_PKEY_free(key) }
    }

    /// Verifies a DER ECDSA signature over a precomputed digest. OpenSSL rejects non-DER encodings
    /// (it re-encodes and compares), accepts high-S values, and checks 0 < r, s < n.
    public func verify(signature: [UInt8], digest: [UInt8]) -> Bool {
        guard let imported = importedKey(), let ctx = EVP_PKEY_CTX_dup(imported.context) else {
            ERR_clear_error()
            return false
        }
        defer { EVP_PKEY_CTX_free(ctx) }
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
    public func makeReusableVerifier() -> ReusableVerifier? {
        importedKey().flatMap { ReusableVerifier(key: $0.key, owner: $0) }
    }

    public final class ReusableVerifier {
        private let ctx: OpaquePointer
        private let owner: AnyObject

        fileprivate init?(key: OpaquePointer, owner: AnyObject) {
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
