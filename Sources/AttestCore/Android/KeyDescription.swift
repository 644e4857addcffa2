/// Android key attestation's KeyDescription (OID 1.3.6.1.4.1.11129.2.1.17), the leaf extension in which
/// the device's secure hardware states what it attests about the key and the device.
///
/// Parsed strictly as DER with the schema of every attestation version devices produce (Keymaster 2-4:
/// 1-4; KeyMint 1 and later: 100, 200, ...): the eight fields in order, each authorization list's tags in
/// any order (one of Google's own samples has them out of order) but each at most once. Work and memory
/// are linear in the extension's size.
public struct KeyDescription: Sendable, Equatable {
    /// Where the key lives and the attestation was made (the SecurityLevel ENUMERATED).
    public enum SecurityLevel: Int, Sendable {
        case software = 0
        case trustedEnvironment = 1
        case strongBox = 2

        /// The name Google's documentation and tools use.
        public var name: String {
            switch self {
            case .software: "SOFTWARE"
            case .trustedEnvironment: "TRUSTED_ENVIRONMENT"
            case .strongBox: "STRONG_BOX"
            }
        }
    }

    public var attestationVersion: Int
    public var attestationSecurityLevel: SecurityLevel
    /// The Keymaster or KeyMint version (KeyMint 1 = 100).
    public var keyMintVersion: Int
    public var keyMintSecurityLevel: SecurityLevel
    /// The bytes the app passed to `setAttestationChallenge`.
    public var attestationChallenge: [UInt8]
    public var uniqueId: [UInt8]
    /// Authorizations the Android framework enforces (the attestation application id lives here).
    public var softwareEnforced: AuthorizationList
    /// Authorizations the secure hardware enforces (root of trust, origin, OS and patch levels).
    public var hardwareEnforced: AuthorizationList

    /// Android caps attestation challenges at 128 bytes; anything longer is no device's.
    public static let maxChallengeBytes = 128

    /// Parses the extension's value (the OCTET STRING's contents).
    public init(der: [UInt8]) throws(ASN1Error) {
        var top = ASN1Reader(der)
        let sequence = try top.next(.sequence)
        try top.finish()
        var r = try top.children(of: sequence)
        attestationVersion = try r.integer(of: r.next(.integer))
        attestationSecurityLevel = try Self.securityLevel(&r)
        keyMintVersion = try r.integer(of: r.next(.integer))
        keyMintSecurityLevel = try Self.securityLevel(&r)
        let challenge = try r.next(.octetString)
        attestationChallenge = try r.octets(of: challenge)
        guard attestationChallenge.count <= Self.maxChallengeBytes else { throw ASN1Error(.invalidValue, at: challenge.start) }
        uniqueId = try r.octets(of: r.next(.octetString))
        softwareEnforced = try AuthorizationList(r.next(.sequence), in: r)
        hardwareEnforced = try AuthorizationList(r.next(.sequence), in: r)
        try r.finish()
        guard attestationVersion >= 1, keyMintVersion >= 0 else { throw ASN1Error(.invalidValue, at: sequence.start) }
    }

    private static func securityLevel(_ r: inout ASN1Reader) throws(ASN1Error) -> SecurityLevel {
        let element = try r.next(.enumerated)
        guard let level = SecurityLevel(rawValue: try r.enumerated(of: element)) else {
            throw ASN1Error(.invalidValue, at: element.start)
        }
        return level
    }
}
