internal import COpenSSL
import AttestCore

/// An RSA public key imported into OpenSSL (`d2i_PUBKEY`), which it frees on deinit: the keys of Google's
/// first attestation root, of older devices' intermediates and of RSA keys devices attest.
///
/// Sendable: the EVP_PKEY is only read after import; each verification uses its own EVP_PKEY_CTX.
public final class RSAPublicKey: @unchecked Sendable {
    private let key: OpaquePointer

    /// Moduli outside this range are no device's or Google's: smaller ones are forgeable, larger ones only
    /// make each verification cost more.
    public static let allowedBits = 2048...8192

    public enum Padding: Sendable {
        case pkcs1v15
        /// RSASSA-PSS with MGF1 over the same digest and any salt length the signer chose.
        case pss
    }

    /// From a DER SubjectPublicKeyInfo holding an RSA key of ``allowedBits``, with nothing after it.
    public init?(subjectPublicKeyInfo der: [UInt8]) {
        guard let parsed = decodePublicKey(der, type: EVP_PKEY_RSA) else { return nil }
        guard Self.allowedBits.contains(Int(EVP_PKEY_get_bits(parsed))) else {
            EVP_PKEY_free(parsed)
            return nil
        }
        key = parsed
    }

    deinit { EVP_PKEY_free(key) }

    /// Verifies `signature` over a precomputed `digest` of the named algorithm.
    public func verify(signature: [UInt8], digest: [UInt8], algorithm: Digest, padding: Padding = .pkcs1v15) -> Bool {
        guard let context = EVP_PKEY_CTX_new(key, nil) else {
            ERR_clear_error()
            return false
        }
        defer { EVP_PKEY_CTX_free(context) }
        var ready = EVP_PKEY_verify_init(context) == 1 && EVP_PKEY_CTX_set_signature_md(context, algorithm.evpMD) == 1
        switch padding {
        case .pkcs1v15:
            ready = ready && EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1
        case .pss:
            ready = ready && EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PSS_PADDING) == 1
                && EVP_PKEY_CTX_set_rsa_mgf1_md(context, algorithm.evpMD) == 1
                && EVP_PKEY_CTX_set_rsa_pss_saltlen(context, RSA_PSS_SALTLEN_AUTO) == 1
        }
        let verified = ready && EVP_PKEY_verify(context, signature, signature.count, digest, digest.count) == 1
        if !verified { ERR_clear_error() }
        return verified
    }

    /// Verifies a signature over `message` hashed with `digest`.
    public func verify(signature: [UInt8], message: some Collection<UInt8>, digest: Digest, padding: Padding = .pkcs1v15) -> Bool {
        verify(signature: signature, digest: digest.hash(message), algorithm: digest, padding: padding)
    }
}
