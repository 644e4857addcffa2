import AttestCore
import AttestCrypto
import Foundation

/// The four certificate authorities of an App Attest deployment, plus the receipt signer, under test keys.
///
/// Mirrors Apple's PKI: an attestation root and intermediate (P-384) issue credential certificates; a receipt
/// root (P-384, like Apple Root CA - G3) and intermediate (P-256, like Apple Application Integration CA 5 - G1)
/// issue the receipt signing certificate (P-256). Keys are created once and reused for every minted object,
/// which keeps minting fast enough for load generation. Two PKIs made by `generate` have identical names but
/// different keys, which is exactly the "same names, other root" fault a verifier must reject.
public final class TestPKI: Sendable {
    let attestationRoot: CertifiedKey
    let attestationIntermediate: CertifiedKey
    let receiptRoot: CertifiedKey
    let receiptIntermediate: CertifiedKey
    let receiptSigner: CertifiedKey

    public var attestationRootDER: [UInt8] { attestationRoot.certificate }
    public var attestationIntermediateDER: [UInt8] { attestationIntermediate.certificate }
    public var receiptRootDER: [UInt8] { receiptRoot.certificate }
    public var receiptIntermediateDER: [UInt8] { receiptIntermediate.certificate }
    public var receiptSignerDER: [UInt8] { receiptSigner.certificate }

    /// The trust anchor for attestation chains, e.g. for `ATTEST_TRUST_ANCHORS`.
    public var attestationRootPEM: String { PEM.encode(attestationRoot.certificate, label: "CERTIFICATE") }
    /// The trust anchor for receipts, e.g. for `ATTEST_RECEIPT_TRUST_ANCHORS`.
    public var receiptRootPEM: String { PEM.encode(receiptRoot.certificate, label: "CERTIFICATE") }

    private init(_ authorities: [CertifiedKey]) {
        attestationRoot = authorities[0]
        attestationIntermediate = authorities[1]
        receiptRoot = authorities[2]
        receiptIntermediate = authorities[3]
        receiptSigner = authorities[4]
    }

    /// New keys and certificates, all valid from `validFrom` to `validUntil`.
    public static func generate(validFrom: Date, validUntil: Date) throws(MintError) -> TestPKI {
        let org = CertificateTemplate.organization
        let attestationRoot = try selfSigned(CertificateTemplate.name([
            (.commonName, "AttestMint App Attestation Root CA"), (.organizationName, org),
            (.stateOrProvinceName, "California"),
        ]), validFrom, validUntil)
        let attestationIntermediateKey = try ECKey.generate(.p384)
        let attestationIntermediate = try CertifiedKey(key: attestationIntermediateKey, certificate: attestationRoot.issue(
            .authority(subject: CertificateTemplate.name([
                (.commonName, "AttestMint App Attestation CA 1"), (.organizationName, org),
                (.stateOrProvinceName, "California"),
            ]), key: attestationIntermediateKey, notBefore: validFrom, notAfter: validUntil, pathLength: 0),
            hash: .sha384))

        let authority = "AttestMint Certification Authority"
        let receiptRoot = try selfSigned(CertificateTemplate.name([
            (.commonName, "AttestMint Root CA - G3"), (.organizationalUnitName, authority),
            (.organizationName, org), (.countryName, "US"),
        ]), validFrom, validUntil)
        let receiptIntermediateKey = try ECKey.generate(.p256)
        let receiptIntermediate = try CertifiedKey(key: receiptIntermediateKey, certificate: receiptRoot.issue(
            .authority(subject: CertificateTemplate.name([
                (.commonName, "AttestMint Application Integration CA 5 - G1"), (.organizationalUnitName, authority),
                (.organizationName, org), (.countryName, "US"),
            ]), key: receiptIntermediateKey, notBefore: validFrom, notAfter: validUntil, pathLength: 0),
            hash: .sha384))
        let signerKey = try ECKey.generate(.p256)
        let receiptSigner = try CertifiedKey(key: signerKey, certificate: receiptIntermediate.issue(
            .receiptSigner(subject: CertificateTemplate.name([
                (.commonName, "AttestMint Application Attestation Fraud Receipt Signing"),
                (.organizationName, org), (.countryName, "US"),
            ]), key: signerKey, notBefore: validFrom, notAfter: validUntil, marker: true),
            hash: .sha256))
        return TestPKI([attestationRoot, attestationIntermediate, receiptRoot, receiptIntermediate, receiptSigner])
    }

    private static func selfSigned(_ subject: [UInt8], _ validFrom: Date, _ validUntil: Date) throws(MintError) -> CertifiedKey {
        let key = try ECKey.generate(.p384)
        let template = CertificateTemplate.authority(subject: subject, key: key, notBefore: validFrom, notAfter: validUntil)
        return try CertifiedKey(key: key, certificate: template.signed(by: key, issuerName: subject, hash: .sha384))
    }

    private static let roles = [
        "attestation root", "attestation intermediate", "receipt root", "receipt intermediate", "receipt signer",
    ]

    /// Every certificate and private key (unencrypted PKCS#8), labelled, so a PKI can be kept between runs: load
    /// generators and the worker under test then agree on trust anchors without regenerating them.
    public func pemBundle() throws(MintError) -> String {
        var text = ""
        for (role, authority) in zip(Self.roles, [attestationRoot, attestationIntermediate, receiptRoot, receiptIntermediate, receiptSigner]) {
            text += "AttestMint \(role)\n" + PEM.encode(authority.certificate, label: "CERTIFICATE")
                + PEM.encode(try authority.key.pkcs8(), label: "PRIVATE KEY")
        }
        return text
    }

    /// A PKI from text written by `pemBundle()`: a certificate and its key for each role, in that order.
    public convenience init(pemBundle: String) throws(MintError) {
        guard let blocks = PEM.blocks(in: pemBundle) else { throw MintError("a PKI bundle has a malformed PEM block") }
        guard blocks.count == 2 * Self.roles.count else {
            throw MintError("a PKI bundle holds \(2 * Self.roles.count) PEM blocks, found \(blocks.count)")
        }
        var authorities: [CertifiedKey] = []
        for index in Self.roles.indices {
            let certificate = blocks[2 * index], key = blocks[2 * index + 1]
            guard certificate.label == "CERTIFICATE", key.label == "PRIVATE KEY" else {
                throw MintError("the \(Self.roles[index]) must be a CERTIFICATE block followed by a PRIVATE KEY block")
            }
            authorities.append(try CertifiedKey(key: ECKey.load(pkcs8: key.der), certificate: certificate.der))
        }
        self.init(authorities)
    }
}
