import AttestCore

/// An X.509 extension given as bytes: lets tests add what a verifier must reject (an unknown critical extension)
/// or tolerate (an unknown non-critical one) without this module modelling every extension.
public struct RawExtension: Sendable {
    /// The encoded Extension SEQUENCE.
    let encoded: [UInt8]

    /// - Parameters:
    ///   - oid: dotted decimal, for example "1.2.3.4", as `OID(_:)` reads it; malformed text is a programming error.
    ///   - critical: encoded as an explicit TRUE; FALSE is omitted, as DER requires.
    ///   - value: the DER inside the extension's OCTET STRING (extnValue).
    public init(oid: String, critical: Bool = false, value: [UInt8]) {
        self.init(oid: OID(oid), critical: critical, value: value)
    }

    init(oid: OID, critical: Bool, value: [UInt8]) {
        encoded = DER.sequence([DER.oid(oid), critical ? DER.booleanTrue : [], DER.octetString(value)])
    }

    /// Critical basicConstraints: CA:TRUE with an optional path length, or CA:FALSE (an empty SEQUENCE).
    static func basicConstraints(isCA: Bool, pathLength: Int? = nil) -> RawExtension {
        let fields = isCA ? [DER.booleanTrue] + (pathLength.map { [DER.integer($0)] } ?? []) : []
        return RawExtension(oid: .basicConstraints, critical: true, value: DER.sequence(fields))
    }

    /// Critical keyUsage from a BIT STRING already encoded with its unused-bits count, e.g. [0x01, 0x06].
    static func keyUsage(_ bitString: [UInt8]) -> RawExtension {
        RawExtension(oid: .keyUsage, critical: true, value: DER.tlv(0x03, bitString))
    }

    /// keyCertSign | cRLSign, Apple's CA key usage.
    static let caKeyUsage = keyUsage([0x01, 0x06])

    static func subjectKeyIdentifier(_ keyId: [UInt8]) -> RawExtension {
        RawExtension(oid: .subjectKeyIdentifier, critical: false, value: DER.octetString(keyId))
    }

    static func authorityKeyIdentifier(_ keyId: [UInt8]) -> RawExtension {
        RawExtension(oid: .authorityKeyIdentifier, critical: false, value: DER.sequence([DER.tlv(0x80, keyId)]))
    }
}
