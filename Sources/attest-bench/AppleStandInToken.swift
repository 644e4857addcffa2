import AttestCore
import AttestCrypto

/// The stand-in's check of the DeviceCheck JWT in `Authorization`, as Apple documents it: three base64url
/// parts, header `alg` ES256 and a known `kid`, claim `iss` the team of that key, `iat` neither older than
/// `maxAgeSeconds` nor in the future beyond a minute, and the signature by the key's private half.
struct AppleStandInToken {
    struct Key {
        let teamId: String
        let keyId: String
        let publicKey: ECPublicKey
    }

    let keys: [String: Key]
    let maxAgeSeconds: Int64

    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    /// The token's team, or why it is refused (the stand-in answers 401 with it).
    func check(_ authorization: String?, now: Timestamp) -> Result<String, Refusal> {
        guard let token = authorization, token.utf8.count <= 4096 else { return .failure(Refusal(description: "no token")) }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64.decodeURL(parts[0]), let claimBytes = Base64.decodeURL(parts[1]),
            let signature = Base64.decodeURL(parts[2]), let header = JSONValue.parse(headerBytes),
            let claims = JSONValue.parse(claimBytes)
        else { return .failure(Refusal(description: "not a JWS compact token")) }
        guard header["alg"]?.stringValue == "ES256" else { return .failure(Refusal(description: "alg is not ES256")) }
        guard let kid = header["kid"]?.stringValue, let key = keys[kid] else { return .failure(Refusal(description: "unknown kid")) }
        guard claims["iss"]?.stringValue == key.teamId else { return .failure(Refusal(description: "iss is not the key's team")) }
        guard case .int(let iat)? = claims["iat"] else { return .failure(Refusal(description: "no iat")) }
        guard iat >= now.seconds - maxAgeSeconds else { return .failure(Refusal(description: "iat too old")) }
        guard iat <= now.seconds + 60 else { return .failure(Refusal(description: "iat in the future")) }
        guard signature.count == 64, let der = ECDSASignatureEncoding.der(fromRaw: signature),
            key.publicKey.verify(signature: der, message: Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)), digest: .sha256)
        else { return .failure(Refusal(description: "signature does not verify")) }
        return .success(key.teamId)
    }
}
