import AttestCore
import AttestCrypto
import COpenSSL

/// An EC private key (P-256 or P-384) owned by this object and freed with it.
///
/// `@unchecked Sendable`: the `EVP_PKEY` is never mutated after creation, and OpenSSL 3 allows concurrent
/// signing with one key (each signature uses its own `EVP_PKEY_CTX`), so minting can run on many threads.
final class ECKey: @unchecked Sendable {
    enum Curve: Sendable {
        case p256, p384

        var groupName: String { self == .p256 ? "P-256" : "P-384" }
        var oid: OID { self == .p256 ? .prime256v1 : .secp384r1 }
        var coordinateSize: Int { self == .p256 ? 32 : 48 }
    }

    let curve: Curve
    /// The uncompressed public point 04 ‖ x ‖ y.
    let publicKeyX962: [UInt8]
    private let pkey: OpaquePointer

    private init(pkey: OpaquePointer, curve: Curve, publicKeyX962: [UInt8]) {
        self.pkey = pkey
        self.curve = curve
        self.publicKeyX962 = publicKeyX962
    }

    deinit { EVP_PKEY_free(pkey) }

    /// A fresh random key on `curve`.
    static func generate(_ curve: Curve) throws(MintError) -> ECKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw .openSSL("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(context) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, curve.groupName) == 1,
              EVP_PKEY_generate(context, &pkey) == 1, let pkey
        else { throw .openSSL("EC key generation") }
        return try adopt(pkey)
    }

    /// A key from unencrypted PKCS#8 DER, as `pkcs8()` writes it.
    static func load(pkcs8 der: [UInt8]) throws(MintError) -> ECKey {
        let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_AutoPrivateKey(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw .openSSL("reading a PKCS#8 private key") }
        return try adopt(parsed)
    }

    /// Takes ownership of `pkey` (freeing it on failure) after checking it is a P-256 or P-384 key.
    private static func adopt(_ pkey: OpaquePointer) throws(MintError) -> ECKey {
        let curve: Curve
        switch (EVP_PKEY_get_base_id(pkey), EVP_PKEY_get_bits(pkey)) {
        case (EVP_PKEY_EC, 256): curve = .p256
        case (EVP_PKEY_EC, 384): curve = .p384
        default:
            EVP_PKEY_free(pkey)
            throw MintError("only P-256 and P-384 keys are supported")
        }
        var point = [UInt8](repeating: 0, count: 1 + 2 * curve.coordinateSize)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(pkey, "pub", &point, point.count, &length) == 1,
              length == point.count, point[0] == 0x04
        else {
            EVP_PKEY_free(pkey)
            throw .openSSL("reading the public point")
        }
        return ECKey(pkey: pkey, curve: curve, publicKeyX962: point)
    }

    /// SubjectPublicKeyInfo DER, the form certificates carry.
    var subjectPublicKeyInfo: [UInt8] {
        DER.sequence([DER.sequence([DER.oid(.ecPublicKey), DER.oid(curve.oid)]), DER.bitString(publicKeyX962)])
    }

    /// The subjectKeyIdentifier: the leftmost 160 bits of SHA-256 of the subjectPublicKey bits (RFC 7093 method 1).
    var subjectKeyIdentifier: [UInt8] { Array(Digest.sha256.hash(publicKeyX962).prefix(20)) }

    /// A DER ECDSA signature over a digest the caller computed. Taking the digest rather than the message keeps
    /// "which bytes are hashed how often" explicit, which is the point of several assertion faults.
    func sign(digest: [UInt8]) throws(MintError) -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new(pkey, nil) else { throw .openSSL("EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(context) }
        var signature = [UInt8](repeating: 0, count: Int(EVP_PKEY_get_size(pkey)))
        var length = signature.count
        guard EVP_PKEY_sign_init(context) == 1,
              EVP_PKEY_sign(context, &signature, &length, digest, digest.count) == 1
        else { throw .openSSL("ECDSA signing") }
        return Array(signature.prefix(length))
    }

    /// Unencrypted PKCS#8 DER of the private key.
    func pkcs8() throws(MintError) -> [UInt8] {
        guard let info = EVP_PKEY2PKCS8(pkey) else { throw .openSSL("EVP_PKEY2PKCS8") }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        return try openSSLDER("encoding PKCS#8") { i2d_PKCS8_PRIV_KEY_INFO(info, $0) }
    }

    /// Whether this is the private key for the certificate `x509` (an `X509 *`).
    func matches(certificate x509: OpaquePointer) -> Bool {
        X509_check_private_key(x509, pkey) == 1
    }
}

/// Runs an OpenSSL `i2d_*` function twice (length, then bytes) and returns the DER it writes.
func openSSLDER(
    _ operation: String, _ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32
) throws(MintError) -> [UInt8] {
    let length = encode(nil)
    guard length > 0 else { throw .openSSL(operation) }
    var der = [UInt8](repeating: 0, count: Int(length))
    let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor = buffer.baseAddress
        return encode(&cursor)
    }
    guard written == length else { throw .openSSL(operation) }
    return der
}
