internal import COpenSSL

/// A DER SubjectPublicKeyInfo decoded by OpenSSL (`d2i_PUBKEY`) when it is exactly one, with nothing
/// after it, and of key type `type` (EVP_PKEY_EC, EVP_PKEY_RSA); the caller owns the EVP_PKEY. nil
/// otherwise, OpenSSL's error queue cleared.
func decodePublicKey(_ der: [UInt8], type: Int32) -> OpaquePointer? {
    let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
        var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
        let parsed = d2i_PUBKEY(nil, &cursor, buffer.count)
        guard cursor == buffer.baseAddress.map({ $0 + buffer.count }) else {
            EVP_PKEY_free(parsed)
            return nil
        }
        return parsed
    }
    guard let parsed, EVP_PKEY_get_base_id(parsed) == type else {
        EVP_PKEY_free(parsed)
        ERR_clear_error()
        return nil
    }
    return parsed
}
