import AttestCrypto
import COpenSSL

/// A private key with its certificate and the certificate fields that issuing under it, or signing a CMS receipt
/// with it, copies byte for byte.
struct CertifiedKey: Sendable {
    let key: ECKey
    let certificate: [UInt8]
    let subjectName: [UInt8]
    let issuerName: [UInt8]
    /// The serial number as an encoded INTEGER (CMS issuerAndSerialNumber).
    let serialNumber: [UInt8]
    /// Empty when the certificate has no subjectKeyIdentifier; certificates it issues then carry no AKI.
    let subjectKeyId: [UInt8]

    /// Reads the fields back from `certificate` with OpenSSL, so generated and PEM-loaded material take one path,
    /// and checks that `key` belongs to it.
    init(key: ECKey, certificate: [UInt8]) throws(MintError) {
        let parsed = certificate.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
        guard let x509 = parsed else { throw .openSSL("parsing a certificate") }
        defer { X509_free(x509) }
        guard key.matches(certificate: x509) else { throw MintError("a private key does not match its certificate") }
        self.key = key
        self.certificate = certificate
        subjectName = try openSSLDER("encoding the subject name") { i2d_X509_NAME(X509_get_subject_name(x509), $0) }
        issuerName = try openSSLDER("encoding the issuer name") { i2d_X509_NAME(X509_get_issuer_name(x509), $0) }
        serialNumber = try openSSLDER("encoding the serial number") { i2d_ASN1_INTEGER(X509_get0_serialNumber(x509), $0) }
        if let keyId = X509_get0_subject_key_id(x509), let data = ASN1_STRING_get0_data(keyId) {
            subjectKeyId = Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(keyId))))
        } else {
            subjectKeyId = []
        }
    }

    /// Signs `template` as this certificate's subject. CA and receipt signer certificates get an
    /// authorityKeyIdentifier (when this certificate has a key id), as Apple's do; Apple's credential
    /// certificates have none, so the leaf passes `authorityKeyIdentifier: false`.
    func issue(
        _ template: CertificateTemplate, hash: Digest, authorityKeyIdentifier: Bool = true
    ) throws(MintError) -> [UInt8] {
        var template = template
        if authorityKeyIdentifier, !subjectKeyId.isEmpty { template.extensions.append(.authorityKeyIdentifier(subjectKeyId)) }
        return try template.signed(by: key, issuerName: subjectName, hash: hash)
    }
}
