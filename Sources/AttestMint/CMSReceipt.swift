import AttestCore
import AttestCrypto

/// The App Attest receipt: a CMS SignedData in BER with indefinite lengths, laid out like Apple's (eContent in
/// 1000-byte OCTET STRING chunks, certificates signer first, one SignerInfo by issuerAndSerialNumber, an
/// ECDSA-SHA256 signature directly over eContent unless signed attributes are asked for).
enum CMSReceipt {
    /// The payload: SET OF SEQUENCE { INTEGER type, INTEGER version 1, OCTET STRING value }, in the order given
    /// (Apple's is by field number, which is not DER SET OF order).
    static func payload(_ fields: [(type: Int, value: [UInt8])]) -> [UInt8] {
        DER.set(fields.map { DER.sequence([DER.integer($0.type), DER.integer(1), DER.octetString($0.value)]) })
    }

    static func signedData(
        payload: [UInt8], signer: CertifiedKey, certificates: [[UInt8]], signedAttributes: ReceiptOptions.SignedAttributes,
        corruptSignature: Bool
    ) throws(MintError) -> [UInt8] {
        let digestAlgorithm = DER.sequence([DER.oid(.sha256), DER.null])
        let chunks = stride(from: 0, to: payload.count, by: 1000).flatMap {
            DER.octetString(Array(payload[$0..<min($0 + 1000, payload.count)]))
        }
        let encapsulatedContent = DER.indefinite(0x30, DER.oid(.data) + DER.indefinite(0xA0, DER.indefinite(0x24, chunks)))

        var signedBytes = payload
        var attributesField: [UInt8] = []
        if signedAttributes != .none {
            let contentDigest = Digest.sha256(payload, signedAttributes == .wrongMessageDigest ? [0] : [])
            // contentType sorts before messageDigest in DER SET OF order (shorter encoding).
            let attributes = [
                DER.sequence([DER.oid(.contentTypeAttribute), DER.set([DER.oid(.data)])]),
                DER.sequence([DER.oid(.messageDigestAttribute), DER.set([DER.octetString(contentDigest)])]),
            ]
            signedBytes = DER.set(attributes)
            attributesField = DER.tlv(0xA0, attributes.flatMap { $0 })
        }
        var signature = try signer.key.sign(digest: Digest.sha256.hash(signedBytes))
        if corruptSignature { signature[signature.count - 1] ^= 0x01 }

        let signerInfo = DER.sequence([
            DER.integer(1),
            DER.sequence([signer.issuerName, signer.serialNumber]),
            digestAlgorithm,
            attributesField,
            Digest.sha256.ecdsaAlgorithmIdentifier,
            DER.octetString(signature),
        ])
        let content = DER.integer(1) + DER.set([digestAlgorithm]) + encapsulatedContent
            + DER.indefinite(0xA0, certificates.flatMap { $0 }) + DER.set([signerInfo])
        return DER.indefinite(0x30, DER.oid(.signedData) + DER.indefinite(0xA0, DER.indefinite(0x30, content)))
    }
}

extension TestPKI {
    /// Signs a receipt payload with this PKI's receipt chain, reissuing the signer certificate when asked.
    func signReceipt(payload: [UInt8], options: ReceiptOptions) throws(MintError) -> [UInt8] {
        var signer = receiptSigner
        if let reissue = options.signer {
            let template = CertificateTemplate.receiptSigner(
                subject: receiptSigner.subjectName, key: receiptSigner.key, notBefore: reissue.notBefore,
                notAfter: reissue.notAfter, marker: reissue.marker)
            signer = try CertifiedKey(key: receiptSigner.key, certificate: receiptIntermediate.issue(template, hash: .sha256))
        }
        let certificates = [signer.certificate, receiptIntermediate.certificate]
            + (options.includeRootCertificate ? [receiptRoot.certificate] : [])
        return try CMSReceipt.signedData(
            payload: payload, signer: signer, certificates: certificates, signedAttributes: options.signedAttributes,
            corruptSignature: options.corruptSignature)
    }
}
