import AttestCrypto

/// `count` bytes from OpenSSL's CSPRNG (serial numbers, receipt tokens).
func randomBytes(_ count: Int) throws(MintError) -> [UInt8] {
    do {
        return try SecureRandom.bytes(count)
    } catch {
        throw .openSSL("RAND_bytes")
    }
}
