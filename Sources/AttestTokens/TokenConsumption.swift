import AttestCore
import AttestJobs

/// What is decided about a token before the ledger of spent tokens is asked (`POST /v1/tokens/consume`,
/// `attest-worker token consume`): that it verifies under the worker's published keys and issuer, that its
/// consumer may spend it, and that it is a token meant to be spent. Pure, so the endpoint and the command
/// apply the same rules.
public enum TokenConsumption {
    /// Who asks: the holder of the shared secret (or an operator with database access) may spend any app's
    /// tokens, an API key only its own app's.
    public enum Consumer: Sendable, Equatable {
        case anyApp
        case app(AppIdentity)
    }

    /// Why a token is not spent before the ledger is asked.
    public enum Refusal: Error, Sendable, Equatable {
        /// Not a valid token of this worker: signature, key (still published), `iss`, `exp`, `nbf`, shape.
        case invalid(TokenRejection)
        /// A valid token of another app than the consumer's.
        case otherApp(AppIdentity)
        /// A valid token without the limited-use claim: a bearer token by contract, which other relying
        /// parties accept without consuming it, so spending it here would protect nothing (CONTRACT 7).
        case notLimitedUse
    }

    /// A token that may be spent: the ledger's key (app, jti), its exp, and the claims to answer with.
    public struct Spendable: Sendable, Equatable {
        public let app: AppIdentity
        public let jti: String
        /// `exp`, Unix seconds.
        public let expiresAt: Int64
        public let claims: JSONValue
    }

    /// A jti is at most this long (the ledger's column bound); the worker's are 22 characters.
    public static let maxJtiBytes = 256

    /// Checks `token` with `verifier` (the worker's key set and skew allowance) for `issuer`, then who may
    /// spend it. The audience is read from the verified token (it names the app), and then must be the
    /// consumer's own app: a key learns nothing of another app's token but that it is not its own.
    public static func admit(
        _ token: String, verifier: TokenVerifier, issuer: String, consumer: Consumer
    ) throws(Refusal) -> Spendable {
        let claims: JSONValue
        do { claims = try verifier.verify(token, issuer: issuer) } catch { throw .invalid(error) }
        guard let app = audience(claims) else { throw .invalid(.audienceMismatch) }
        if case .app(let own) = consumer, own != app { throw .otherApp(app) }
        guard LimitedUse.isLimitedUse(claims) else { throw .notLimitedUse }
        guard case .string(let jti)? = claims["jti"], !jti.isEmpty, jti.utf8.count <= maxJtiBytes,
            case .int(let exp)? = claims["exp"]
        else { throw .invalid(.malformed) }
        return Spendable(app: app, jti: jti, expiresAt: exp, claims: claims)
    }

    /// The app a token's `aud` names (teamId.bundleId, split after the 10-character team id); nil when it is
    /// not exactly one valid pair.
    static func audience(_ claims: JSONValue) -> AppIdentity? {
        guard case .string(let aud)? = claims["aud"], let dot = aud.firstIndex(of: ".") else { return nil }
        return AppIdentity(validating: String(aud[..<dot]), String(aud[aud.index(after: dot)...]))
    }
}
