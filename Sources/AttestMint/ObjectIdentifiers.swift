import AttestCore

/// The object identifiers only minting needs; those the verifier reads too are AttestCore's.
extension OID {
    static let commonName = OID("2.5.4.3")
    static let countryName = OID("2.5.4.6")
    static let stateOrProvinceName = OID("2.5.4.8")
    static let organizationName = OID("2.5.4.10")
    static let organizationalUnitName = OID("2.5.4.11")

    static let subjectKeyIdentifier = OID("2.5.29.14")
    static let authorityKeyIdentifier = OID("2.5.29.35")

    /// Apple's App Attest extended key usage, carried by every credential certificate.
    static let appAttestKeyPurpose = OID("1.2.840.113635.100.4.24")
}
