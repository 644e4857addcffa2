import AttestCore
import AttestCrypto
import Synchronization

/// The DeviceCheck JWTs that authorize refreshes, one per team: ES256 with header `alg` and `kid` (the
/// key id) and claims `iss` (the team id) and `iat`. Apple refuses a token issued more than an hour ago,
/// so each is reused for ``renewAfterSeconds`` and then signed anew (also when the clock went back before
/// its `iat`): one signature per team per 20 minutes, not per request.
final class DeviceCheckTokens: Sendable {
    static let renewAfterSeconds: Int64 = 20 * 60
    private let keys: [String: DeviceCheckKey]
    private let clock: any Clock
    private let cache = Mutex<[String: (token: String, issuedAt: Int64)]>([:])

    init(keys: [String: DeviceCheckKey], clock: any Clock) {
        self.keys = keys
        self.clock = clock
    }

    func isConfigured(teamId: String) -> Bool { keys[teamId] != nil }

    /// The team's current token; nil when it has no key or OpenSSL refused to sign.
    func token(teamId: String) -> String? {
        guard let key = keys[teamId] else { return nil }
        let now = clock.now().seconds
        if let cached = cache.withLock({ $0[teamId] }), cached.issuedAt <= now, now - cached.issuedAt < Self.renewAfterSeconds {
            return cached.token
        }
        guard let token = Self.sign(key: key, issuedAt: now) else { return nil }
        cache.withLock { $0[teamId] = (token, now) }
        return token
    }

    /// header.claims.signature, each base64url without padding (RFC 7515 compact form).
    static func sign(key: DeviceCheckKey, issuedAt: Int64) -> String? {
        let header = JSONValue.object([("alg", .string("ES256")), ("kid", .string(key.keyId))])
        let claims = JSONValue.object([("iss", .string(key.teamId)), ("iat", .int(issuedAt))])
        let signingInput = Base64.encodeURL(Array(header.serialized().utf8)) + "." + Base64.encodeURL(Array(claims.serialized().utf8))
        guard let signature = key.privateKey.signES256(Array(signingInput.utf8)) else { return nil }
        return signingInput + "." + Base64.encodeURL(signature)
    }
}
