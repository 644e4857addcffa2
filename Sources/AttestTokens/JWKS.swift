import AttestCore

/// A JSON Web Key Set: every key whose tokens may still be live, the signing key first.
public struct JWKS: Sendable {
    public let keys: [JWK]

    /// A published set is small; anything larger is not one.
    static let maxBytes = 1 << 20

    public init(keys: [JWK]) {
        self.keys = keys
    }

    /// Reads `{"keys": [...]}` strictly. Members of other key types or curves are skipped, since a shared
    /// set may hold them; an EC P-256 member that is malformed, or a repeated `kid`, rejects the set.
    public init?(json bytes: [UInt8]) {
        guard bytes.count <= Self.maxBytes, let json = JSONValue.parse(bytes, maxDepth: 8),
              case .array(let members)? = json["keys"]
        else { return nil }
        var keys = [JWK]()
        for member in members {
            guard case .object = member else { return nil }
            if member["kty"]?.stringValue != "EC" || member["crv"]?.stringValue != "P-256" { continue }
            guard let key = JWK(json: member), !keys.contains(where: { $0.kid == key.kid }) else { return nil }
            keys.append(key)
        }
        self.keys = keys
    }

    public func key(id: String) -> JWK? { keys.first { $0.kid == id } }

    public var json: JSONValue { .object([("keys", .array(keys.map(\.json)))]) }
}
