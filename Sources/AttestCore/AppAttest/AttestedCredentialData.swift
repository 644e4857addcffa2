/// aaguid(16) ‖ credentialIdLength(2) ‖ credentialId ‖ COSE_Key, the part of attestation authenticator data
/// that names the attested key.
public struct AttestedCredentialData: Sendable {
    public static let productionAAGUID = Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
    public static let developmentAAGUID = Array("appattestdevelop".utf8)

    public let aaguid: ArraySlice<UInt8>
    public let credentialId: ArraySlice<UInt8>
    /// The credential public key as an X9.62 uncompressed point 04 ‖ x ‖ y, from the COSE EC2 key.
    public let publicKey: [UInt8]

    static func parse(_ bytes: [UInt8], from start: Int, maxDepth: Int) throws(AuthenticatorDataError) -> (Self, Int) {
        guard bytes.count - start >= 18 else { throw .malformed("attested credential data truncated") }
        let aaguid = bytes[start..<start + 16]
        let length = Int(bytes[start + 16]) << 8 | Int(bytes[start + 17])
        let idStart = start + 18
        guard bytes.count - idStart >= length else { throw .malformed("credentialId truncated") }
        let credentialId = bytes[idStart..<idStart + length]
        let key: CBORValue
        let end: Int
        do {
            (key, end) = try CBORDecoder(maxDepth: maxDepth).decodePrefix(bytes, from: idStart + length)
        } catch {
            throw .malformed("COSE key: \(error)")
        }
        return (Self(aaguid: aaguid, credentialId: credentialId, publicKey: try coseP256Point(key)), end)
    }

    /// An EC2 (kty 2) ES256 (alg -7) P-256 (crv 1) COSE key with 32-byte coordinates (RFC 9053 §7.1).
    private static func coseP256Point(_ key: CBORValue) throws(AuthenticatorDataError) -> [UInt8] {
        guard case .map = key else { throw .malformed("COSE key is not a map") }
        guard key[1]?.intValue == 2, key[3]?.intValue == -7, key[-1]?.intValue == 1,
            let x = key[-2]?.bytesValue, x.count == 32, let y = key[-3]?.bytesValue, y.count == 32
        else { throw .malformed("COSE key is not an EC2 ES256 P-256 key") }
        return [0x04] + x + y
    }
}
