import COpenSSL

/// `count` bytes from OpenSSL's CSPRNG (serial numbers, receipt tokens).
func randomBytes(_ count: Int) throws(MintError) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    guard RAND_bytes(&bytes, Int32(count)) == 1 else { throw .openSSL("RAND_bytes") }
    return bytes
}
