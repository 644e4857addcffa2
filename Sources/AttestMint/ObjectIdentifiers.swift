/// The encoded object identifiers the minted certificates and receipts use.
enum OIDs {
    static let ecPublicKey = DER.oid("1.2.840.10045.2.1")
    static let prime256v1 = DER.oid("1.2.840.10045.3.1.7")
    static let secp384r1 = DER.oid("1.3.132.0.34")
    static let ecdsaWithSHA256 = DER.oid("1.2.840.10045.4.3.2")
    static let ecdsaWithSHA384 = DER.oid("1.2.840.10045.4.3.3")
    static let sha256 = DER.oid("2.16.840.1.101.3.4.2.1")

    static let commonName = DER.oid("2.5.4.3")
    static let countryName = DER.oid("2.5.4.6")
    static let stateOrProvinceName = DER.oid("2.5.4.8")
    static let organizationName = DER.oid("2.5.4.10")
    static let organizationalUnitName = DER.oid("2.5.4.11")

    static let subjectKeyIdentifier = DER.oid("2.5.29.14")
    static let keyUsage = DER.oid("2.5.29.15")
    static let basicConstraints = DER.oid("2.5.29.19")
    static let authorityKeyIdentifier = DER.oid("2.5.29.35")
    static let extendedKeyUsage = DER.oid("2.5.29.37")

    /// Apple's App Attest extended key usage, carried by every credential certificate.
    static let appAttestKeyPurpose = DER.oid("1.2.840.113635.100.4.24")
    /// The credential certificate extension holding the attestation nonce.
    static let appAttestNonce = DER.oid("1.2.840.113635.100.8.2")
    /// The marker Apple puts on App Attest receipt signing certificates.
    static let receiptSigningMarker = DER.oid("1.2.840.113635.100.12.15")

    static let cmsData = DER.oid("1.2.840.113549.1.7.1")
    static let cmsSignedData = DER.oid("1.2.840.113549.1.7.2")
    static let contentTypeAttribute = DER.oid("1.2.840.113549.1.9.3")
    static let messageDigestAttribute = DER.oid("1.2.840.113549.1.9.4")
}
