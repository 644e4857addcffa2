import AttestCore
internal import COpenSSL

/// A P-256 private key owned as an OpenSSL EVP_PKEY, which it frees on deinit: the signing half of verdict
/// tokens (ES256). Only P-256, because ES256 names that curve and nothing else.
///
/// Sendable: after construction the EVP_PKEY is only read, and OpenSSL 3 allows concurrent signatures with
/// one key as long as each uses its own EVP_PKEY_CTX (created per call here).
public final class ECPrivateKey: @unchecked Sendable {
    private let key: OpaquePointer
    /// The uncompressed public point 04 ‖ x ‖ y (65 bytes).
    public let publicPoint: [UInt8]

    /// Why a PEM text is not a usable key. The messages never quote key material.
    public enum LoadError: Error, Sendable, CustomStringConvertible {
        case notPrivateKeyPEM, encrypted, unreadable, notP256

        public var description: String {
            switch self {
            case .notPrivateKeyPEM: "no PRIVATE KEY or EC PRIVATE KEY PEM block"
            case .encrypted: "encrypted private keys are not supported; store it unencrypted with restricted permissions"
            case .unreadable: "OpenSSL cannot read the private key"
            case .notP256: "not a P-256 (prime256v1) EC key"
            }
        }
    }

    /// From the first PKCS#8 (`PRIVATE KEY`) or SEC1 (`EC PRIVATE KEY`) block of `pem`, as `openssl genpkey`
    /// and `openssl ecparam -genkey` write them. Parsing the armour here means OpenSSL never prompts for a
    /// passphrase.
    public init(pem: String) throws(LoadError) {
        guard let blocks = PEM.blocks(in: pem) else { throw .notPrivateKeyPEM }
        if blocks.contains(where: { $0.label == "ENCRYPTED PRIVATE KEY" }) { throw .encrypted }
        guard let der = blocks.first(where: { $0.label == "PRIVATE KEY" || $0.label == "EC PRIVATE KEY" })?.der
        else { throw .notPrivateKeyPEM }
        let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            let parsed = d2i_AutoPrivateKey(nil, &cursor, buffer.count)
            if parsed != nil && cursor != buffer.baseAddress.map({ $0 + buffer.count }) {
                EVP_PKEY_free(parsed)
                return nil
            }
            return parsed
        }
        guard let parsed else {
            ERR_clear_error()
            throw .unreadable
        }
        var group = [CChar](repeating: 0, count: 64)
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_base_id(parsed) == EVP_PKEY_EC,
              EVP_PKEY_get_utf8_string_param(parsed, "group", &group, group.count, nil) == 1,
              String(decoding: group.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1",
              EVP_PKEY_get_octet_string_param(parsed, "pub", &point, point.count, &length) == 1,
              length == 65, point[0] == 0x04
        else {
            EVP_PKEY_free(parsed)
            ERR_clear_error()
            throw .notP256
        }
        key = parsed
        publicPoint = point
    }

    deinit { EVP_PKEY_free(key) }

    /// The public half, for verifying what this key signed.
    public var publicKey: ECPublicKey { ECPublicKey(p256Point: publicPoint)! }

    /// An ES256 signature of `message` (SHA-256, then ECDSA): r ‖ s as two 32-byte big-endian integers,
    /// the JOSE form (RFC 7518 §3.4), with s low (≤ n/2; OpenSSL returns either half) so that a token has
    /// one valid signature string. Nil only when OpenSSL refuses to sign, which points at a broken
    /// environment.
    public func signES256(_ message: some Collection<UInt8>) -> [UInt8]? {
        let digest = Digest.sha256.hash(message)
        guard let ctx = EVP_PKEY_CTX_new(key, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(ctx) }
        var signature = [UInt8](repeating: 0, count: Int(EVP_PKEY_get_size(key)))
        var length = signature.count
        guard EVP_PKEY_sign_init(ctx) == 1, EVP_PKEY_sign(ctx, &signature, &length, digest, digest.count) == 1 else {
            ERR_clear_error()
            return nil
        }
        return ECDSASignatureEncoding.raw(fromDER: Array(signature.prefix(length)), coordinateSize: 32)
            .map { ECDSASignatureEncoding.lowS(p256Raw: $0) }
    }
}
