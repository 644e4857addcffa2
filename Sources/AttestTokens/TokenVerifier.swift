import AttestCore
import AttestCrypto
import AttestJobs

/// Checks verdict tokens against a key set: the relying party's side, used by `token verify` and tests.
/// Every input is hostile: the token is size-bounded, parsed strictly, and its signature is checked
/// before any claim is read.
public struct TokenVerifier: Sendable {
    public let jwks: JWKS
    public let clock: any Clock
    /// Tolerated clock difference between issuer and verifier for `exp` and `nbf`.
    public let leewaySeconds: Int64

    /// Tokens are a few hundred bytes; the bound only stops abuse, custom claims included.
    public static let maxTokenBytes = 16 * 1024

    public init(jwks: JWKS, clock: any Clock = SystemClock(), leewaySeconds: Int64 = 60) {
        self.jwks = jwks
        self.clock = clock
        self.leewaySeconds = leewaySeconds
    }

    /// The claims of `token` when it is valid; `audience` (an App ID, teamId.bundleId) and `issuer` are
    /// checked when given. A high-S signature is refused: the worker signs low-S only, and accepting both
    /// halves would give every token a second valid string.
    public func verify(
        _ token: String, audience: String? = nil, issuer: String? = nil, checkExpiry: Bool = true
    ) throws(TokenRejection) -> JSONValue {
        guard token.utf8.count <= Self.maxTokenBytes else { throw .malformed }
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64.decodeURL(Substring(parts[0])),
              let payloadBytes = Base64.decodeURL(Substring(parts[1])),
              let signature = Base64.decodeURL(Substring(parts[2])),
              let header = JSONValue.parse(headerBytes, maxDepth: 4), case .object = header
        else { throw .malformed }

        guard header["alg"]?.stringValue == "ES256" else { throw .algNotAllowed }
        // No JWS extension is understood here, so any `crit` must be refused (RFC 7515 §4.1.11).
        guard header["crit"] == nil, let kid = header["kid"]?.stringValue else { throw .malformed }
        guard let key = jwks.key(id: kid) else { throw .unknownKid }
        let signingInput = token.utf8.prefix(parts[0].count + 1 + parts[1].count)
        guard signature.count == 64, ECDSASignatureEncoding.isLowS(p256Raw: signature),
              let der = ECDSASignatureEncoding.der(fromRaw: signature),
              key.publicKey.verify(signature: der, message: signingInput, digest: .sha256)
        else { throw .signatureInvalid }

        guard let claims = JSONValue.parse(payloadBytes, maxDepth: 16), case .object = claims else { throw .malformed }
        let now = clock.now().seconds
        guard let exp = try Self.seconds(claims["exp"]) else { throw .malformed }
        if checkExpiry, now - leewaySeconds >= exp { throw .expired }
        if let nbf = try Self.seconds(claims["nbf"]), now + leewaySeconds < nbf { throw .notYetValid }
        if let audience {
            switch claims["aud"] {
            case .string(let aud)? where aud == audience: break
            case .array(let auds)? where auds.contains(.string(audience)): break
            default: throw .audienceMismatch
            }
        }
        if let issuer, claims["iss"] != .string(issuer) { throw .issuerMismatch }
        return claims
    }

    /// A NumericDate claim (RFC 7519 §2) in whole seconds; nil when absent. Bounded so that hostile values
    /// never overflow the comparisons.
    private static func seconds(_ value: JSONValue?) throws(TokenRejection) -> Int64? {
        let limit: Int64 = 1 << 40
        switch value {
        case nil: return nil
        case .int(let n)? where -limit < n && n < limit: return n
        case .double(let d)? where -Double(limit) < d && d < Double(limit): return Int64(d.rounded(.down))
        default: throw .malformed
        }
    }
}
