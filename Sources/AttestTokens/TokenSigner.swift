import AttestCore
import AttestCrypto
import AttestJobs
import Foundation

/// The verdict-token key ring: the first key signs, the others are retired keys kept only so their
/// unexpired tokens still verify against the published JWKS. Rotation is a reordering of the list.
public struct TokenSigner: Sendable {
    public static let defaultIssuer = "attest-worker"
    /// CONTRACT 7: one hour.
    public static let defaultLifetimeSeconds: Int64 = 3600
    /// A verdict is about one moment; a token outliving a year would outlive any key rotation plan.
    public static let maxLifetimeSeconds: Int64 = 366 * 86_400

    /// The `iss` claim of every token.
    public let issuer: String
    /// Every key's public half, the signing key first.
    public let jwks: JWKS
    private let signingKey: ECPrivateKey

    /// Why a key ring could not be built; the messages name files, never key material.
    public struct LoadError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// OpenSSL refused to sign with a key it loaded: a broken environment, not a bad verdict.
    public struct SigningFailed: Error, Sendable, CustomStringConvertible {
        public var description: String { "OpenSSL could not sign a verdict token" }
    }

    public init(keys: [ECPrivateKey], issuer: String = defaultIssuer) throws(LoadError) {
        guard let first = keys.first else { throw LoadError(description: "no token signing key") }
        guard !issuer.isEmpty else { throw LoadError(description: "the token issuer is empty") }
        let jwks = keys.map(JWK.init(publicKeyOf:))
        for (index, key) in jwks.enumerated() where jwks[..<index].contains(where: { $0.kid == key.kid }) {
            throw LoadError(description: "token key \(index + 1) repeats an earlier key")
        }
        signingKey = first
        self.jwks = JWKS(keys: jwks)
        self.issuer = issuer
    }

    /// Loads PEM private keys (PKCS#8 or SEC1, P-256) from `paths`, the signing key first.
    public init(pemFiles paths: [String], issuer: String = defaultIssuer) throws(LoadError) {
        var keys = [ECPrivateKey]()
        for path in paths {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw LoadError(description: "cannot read token key \(path)")
            }
            do {
                keys.append(try ECPrivateKey(pem: text))
            } catch {
                throw LoadError(description: "token key \(path): \(error)")
            }
        }
        try self.init(keys: keys, issuer: issuer)
    }

    /// The `kid` tokens are signed under now.
    public var signingKeyID: String { jwks.keys[0].kid }

    /// A compact JWS (RFC 7515) of `claims` under the signing key: ES256 with the key's `kid`.
    public func sign(claims: JSONValue) throws(SigningFailed) -> String {
        let header = JSONValue.object([("alg", .string("ES256")), ("typ", .string("JWT")), ("kid", .string(signingKeyID))])
        let signingInput = Base64.encodeURL(Array(header.serialized().utf8)) + "." + Base64.encodeURL(Array(claims.serialized().utf8))
        guard let signature = signingKey.signES256(Array(signingInput.utf8)) else { throw SigningFailed() }
        return signingInput + "." + Base64.encodeURL(signature)
    }
}
