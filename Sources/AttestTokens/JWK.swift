import AttestCore
import AttestCrypto
import AttestJobs

/// One P-256 public key as a JSON Web Key (RFC 7517/7518), identified by its RFC 7638 thumbprint so the
/// same key gets the same `kid` on every worker without any coordination.
public struct JWK: Sendable {
    public let kid: String
    public let publicKey: ECPublicKey
    /// The affine coordinates, 32 bytes each.
    private let x: [UInt8]
    private let y: [UInt8]

    /// The public half of a signing key.
    public init(publicKeyOf key: ECPrivateKey) {
        x = Array(key.publicPoint[1...32])
        y = Array(key.publicPoint[33...64])
        publicKey = key.publicKey
        kid = Self.thumbprint(x: x, y: y)
    }

    /// An `EC`/`P-256` member of a published key set; nil when it is not one or its point is invalid. A `kid`
    /// given there wins over the thumbprint, since that is what tokens name.
    init?(json: JSONValue) {
        guard json["kty"]?.stringValue == "EC", json["crv"]?.stringValue == "P-256",
              let x = json["x"]?.stringValue.flatMap(Base64.decodeURL), x.count == 32,
              let y = json["y"]?.stringValue.flatMap(Base64.decodeURL), y.count == 32,
              let key = ECPublicKey(p256Point: [0x04] + x + y)
        else { return nil }
        if let kid = json["kid"], kid.stringValue == nil { return nil }
        self.x = x
        self.y = y
        publicKey = key
        kid = json["kid"]?.stringValue ?? Self.thumbprint(x: x, y: y)
    }

    /// RFC 7638: base64url SHA-256 of the required members in lexicographic order, without whitespace.
    static func thumbprint(x: [UInt8], y: [UInt8]) -> String {
        let canonical = JSONValue.object([
            ("crv", .string("P-256")), ("kty", .string("EC")),
            ("x", .string(Base64.encodeURL(x))), ("y", .string(Base64.encodeURL(y))),
        ])
        return Base64.encodeURL(Digest.sha256.hash(Array(canonical.serialized().utf8)))
    }

    public var json: JSONValue {
        .object([
            ("kty", .string("EC")), ("crv", .string("P-256")),
            ("x", .string(Base64.encodeURL(x))), ("y", .string(Base64.encodeURL(y))),
            ("kid", .string(kid)), ("use", .string("sig")), ("alg", .string("ES256")),
        ])
    }
}
