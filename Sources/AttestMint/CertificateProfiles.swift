import AttestCore
import Foundation

/// The certificate shapes of the App Attest PKI, copied from Apple's certificates (extension sets, key usages,
/// names), with the knobs the fault catalogue needs.
extension CertificateTemplate {
    /// The organization in every test name, so a test certificate is never mistaken for Apple's.
    static let organization = "AttestMint Test PKI"

    /// A root or intermediate CA: critical basicConstraints, critical keyUsage keyCertSign|cRLSign and a
    /// subjectKeyIdentifier, like Apple's roots and intermediates. `isCA: false` writes CA:FALSE instead, a fault.
    static func authority(
        subject: [UInt8], key: ECKey, notBefore: Date, notAfter: Date, isCA: Bool = true, pathLength: Int? = nil,
        extraExtensions: [RawExtension] = []
    ) -> CertificateTemplate {
        CertificateTemplate(
            subject: subject, subjectPublicKeyInfo: key.subjectPublicKeyInfo, notBefore: notBefore, notAfter: notAfter,
            extensions: [.basicConstraints(isCA: isCA, pathLength: isCA ? pathLength : nil), .caKeyUsage,
                         .subjectKeyIdentifier(key.subjectKeyIdentifier)] + extraExtensions)
    }

    /// The receipt signing certificate ("Application Attestation Fraud Receipt Signing"): an end entity with
    /// digitalSignature and, unless `marker` is false, Apple's non-critical marker 1.2.840.113635.100.12.15 = NULL.
    static func receiptSigner(subject: [UInt8], key: ECKey, notBefore: Date, notAfter: Date, marker: Bool) -> CertificateTemplate {
        let markerExtension = RawExtension(oid: .appleReceiptSigner, critical: false, value: DER.null)
        return CertificateTemplate(
            subject: subject, subjectPublicKeyInfo: key.subjectPublicKeyInfo, notBefore: notBefore, notAfter: notAfter,
            extensions: [.basicConstraints(isCA: false), .keyUsage([0x07, 0x80]),
                         .subjectKeyIdentifier(key.subjectKeyIdentifier)] + (marker ? [markerExtension] : []))
    }

    /// The credential certificate (credCert): subject CN = hex keyId, Apple's critical basicConstraints and
    /// keyUsage, the App Attest EKU, then the nonce extension (when given) and any extra extensions.
    static func credential(
        keyId: [UInt8], device: ECKey, notBefore: Date, notAfter: Date, nonce: RawExtension?, extraExtensions: [RawExtension]
    ) -> CertificateTemplate {
        let subject = name([
            (.commonName, Hex.encode(keyId)),
            (.organizationalUnitName, "AAA Certification"),
            (.organizationName, organization),
            (.stateOrProvinceName, "California"),
        ])
        let extendedKeyUsage = RawExtension(
            oid: .extendedKeyUsage, critical: false, value: DER.sequence([DER.oid(.appAttestKeyPurpose)]))
        return CertificateTemplate(
            subject: subject, subjectPublicKeyInfo: device.subjectPublicKeyInfo, notBefore: notBefore, notAfter: notAfter,
            extensions: [.basicConstraints(isCA: false), .keyUsage([0x04, 0xF0]), extendedKeyUsage]
                + (nonce.map { [$0] } ?? []) + extraExtensions)
    }

    /// The nonce extension 1.2.840.113635.100.8.2 with an arbitrary extnValue.
    static func nonceExtension(value: [UInt8]) -> RawExtension {
        RawExtension(oid: .appleNonce, critical: false, value: value)
    }

    /// Apple's nonce extension value: SEQUENCE { [1] EXPLICIT OCTET STRING nonce } (30 24 a1 22 04 20 ...).
    static func nonceExtensionValue(_ nonce: [UInt8]) -> [UInt8] {
        DER.sequence([DER.explicit(1, DER.octetString(nonce))])
    }
}
