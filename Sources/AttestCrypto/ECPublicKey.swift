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
/// one key as long as each uses its own EVP_PKEY_CTX. Verifications take a context initialised for
/// verification from a small pool (``Imported``) and give it back: `EVP_PKEY_CTX_new` walks the name map
/// too and `EVP_PKEY_verify_init` fetches the algorithm, together more than the parsing and hashing around
/// an assertion's one verify, and even copying an initialised context (`EVP_PKEY_CTX_dup` and its free)
/// costs about 2% of a verify.
public final class ECPublicKey: @unchecked Sendable {
    /// Where the EVP_PKEY comes from.
    private enum Source {
        /// An uncompressed point already checked to lie on the curve, imported at the first verification.
        case point(CurveParameters, [UInt8])
        /// A key `d2i_PUBKEY` decoded, one reference owned here.
        case decoded(OpaquePointer)
    }

    private let source: Source
    /// The imported key and its pool of initialised contexts, made at the first verification.
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
            guard let decoded = decodePublicKey(der, type: EVP_PKEY_EC) else { return nil }
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

    /// The EVP_PKEY (one reference owned) and the idle contexts initialised for verification from it.
    ///
    /// The pool starts with the one context made at import, which is all a key verifying on one thread at
    /// a time ever holds (the memory of a device key is as with a single context). A verification finding
    /// none idle (another thread holds each) initialises one more; at most ``maxIdle`` are kept once given
    /// back, the rest are freed, so a key shared by every thread (an issuer's) holds at most that many.
    /// `idle` is read and changed only under the lock of the ECPublicKey's `imported` Mutex.
    final class Imported: @unchecked Sendable {
        /// Idle contexts one key keeps: about the threads that verify with one issuer key at once.
        static let maxIdle = 4

        let key: OpaquePointer
        var idle: [OpaquePointer]

        init?(owning key: OpaquePointer) {
            guard let context = Self.makeContext(key) else {
                EVP_PKEY_free(key)
                return nil
            }
            self.key = key
            idle = [context]
            idle.reserveCapacity(Self.maxIdle)
        }

        /// A new context initialised for verification with `key`, or nil when OpenSSL cannot make one.
        static func makeContext(_ key: OpaquePointer) -> OpaquePointer? {
            guard let context = EVP_PKEY_CTX_new(key, nil) else { return nil }
            guard EVP_PKEY_verify_init(context) == 1 else {
                EVP_PKEY_CTX_free(context)
                return nil
            }
            return context
        }

        deinit {
            for context in idle { EVP_PKEY_CTX_free(context) }
            EVP_PKEY_free(key)
        }
    }

    /// How many contexts the key holds idle (none before its first verification).
    var idleContexts: Int {
        imported.withLock { $0?.idle.count ?? 0 }
    }

    /// The key imported into OpenSSL, made once; nil when OpenSSL cannot make it.
    private func importedKey() -> Imported? {
        imported.withLock { Self.importIfNeeded(&$0, from: source) }
    }

    /// `imported`, made from `source` when it is still nil; called under the lock.
    private static func importIfNeeded(_ imported: inout Imported?, from source: Source) -> Imported? {
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

    /// The imported key and an idle context taken from its pool, or a new one when none is idle.
    func takeContext() -> (Imported, OpaquePointer)? {
        let taken = imported.withLock { imported -> (Imported, OpaquePointer?)? in
            guard let key = Self.importIfNeeded(&imported, from: source) else { return nil }
            return (key, key.idle.popLast())
        }
        guard let taken else { return nil }
        if let context = taken.1 { return (taken.0, context) }
        return Imported.makeContext(taken.0.key).map { (taken.0, $0) }
    }

    /// Gives a context back to the pool, or frees it when the pool already holds ``Imported/maxIdle``.
    func giveBack(_ context: OpaquePointer, to key: Imported) {
        let kept = imported.withLock { _ in
            guard key.idle.count < Imported.maxIdle else { return false }
            key.idle.append(context)
            return true
        }
        if !kept { EVP_PKEY_CTX_free(context) }
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
        guard let taken = takeContext() else {
            ERR_clear_error()
            return false
        }
        let (key, context) = taken
        let verified = Self.verify(signature: signature, digest: digest, with: context)
        giveBack(context, to: key)
        return verified
    }

    /// One verification on an initialised context, which verifies again after any outcome: verification
    /// leaves nothing in it (`openssl speed` reuses one the same way).
    static func verify(signature: [UInt8], digest: [UInt8], with context: OpaquePointer) -> Bool {
        let result = EVP_PKEY_verify(context, signature, signature.count, digest, digest.count)
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
            guard let ctx = Imported.makeContext(key) else { return nil }
            self.ctx = ctx
            self.owner = owner
        }

        deinit { EVP_PKEY_CTX_free(ctx) }

        public func verify(signature: [UInt8], digest: [UInt8]) -> Bool {
            EVP_PKEY_verify(ctx, signature, signature.count, digest, digest.count) == 1
        }
    }
}
