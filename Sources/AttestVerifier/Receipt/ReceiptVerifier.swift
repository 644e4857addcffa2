import AttestCore
import AttestCrypto

/// Verifies the receipt embedded in an attestation (docs/CHECK_ORDER.md step 11): BER CMS SignedData with one
/// signer, ECDSA-SHA256 over eContent (or over DER signed attributes bound to it by messageDigest), the
/// signer chained through the CMS-supplied certificates to the pinned receipt root, the signer carrying
/// Apple's marker extension, and the payload naming this app, this key and type ATTEST.
///
/// The signer certificate is shared by all receipts of a period, so it is cached like an intermediate;
/// its validity is still checked against each job's time. The CMS certificates already verified are taken
/// from the cache by their exact bytes instead of being parsed again.
public struct ReceiptVerifier: Sendable {
    public let chain: ChainVerifier
    /// Longest signer path accepted from the CMS certificates (Apple uses one intermediate).
    static let maxIntermediates = 3

    public init(anchor: TrustAnchor) {
        chain = ChainVerifier(anchor: anchor)
    }

    /// - Parameters:
    ///   - expectedAppId: teamId.bundleId.
    ///   - attestedKey: the X9.62 point of the credential certificate.
    ///   - expectedType: "ATTEST" for attestations.
    ///   - attestedCertificate: the credential certificate already parsed, if at hand: a payload holding
    ///     exactly its bytes is not parsed again (its key is still compared with `attestedKey`).
    public func verify(
        _ der: [UInt8], expectedAppId: String, attestedKey: [UInt8], expectedType: String = "ATTEST",
        attestedCertificate: Certificate? = nil, at time: Timestamp
    ) -> Result<Receipt, ReceiptFailure> {
        let signed: SignedData
        do {
            signed = try SignedData(ber: der, known: chain.cache.certificate(for:))
        } catch {
            return .failure(ReceiptFailure("not a CMS SignedData: \(error)"))
        }
        guard signed.encapsulatedContentType == .data else { return .failure(ReceiptFailure("eContentType is not id-data")) }
        guard signed.signer.digestAlgorithm == .sha256, signed.signer.signatureAlgorithm == .ecdsaWithSHA256,
            signed.digestAlgorithms.contains(.sha256)
        else {
            return .failure(ReceiptFailure("signer does not use ECDSA with SHA-256"))
        }
        guard let signerCertificate = signed.certificates.first(where: {
            $0.issuer == signed.signer.issuer && $0.serialNumber == signed.signer.serialNumber
        }) else { return .failure(ReceiptFailure("signer certificate not included")) }

        let key: ECPublicKey
        switch verifyPath(of: signerCertificate, among: signed.certificates, at: time) {
        case .failure(let failure): return .failure(failure)
        case .success(let signerKey): key = signerKey
        }

        let signedBytes: [UInt8]
        if let attributes = signed.signer.signedAttributes {
            guard let contentType = signed.signer.signedAttribute(.contentTypeAttribute),
                contentType == [0x06, UInt8(OID.data.encoded.count)] + OID.data.encoded,
                let digest = signed.signer.signedAttribute(.messageDigestAttribute),
                ConstantTime.equal(digest, [0x04, 32] + Digest.sha256.hash(signed.content))
            else { return .failure(ReceiptFailure("signed attributes do not bind the content")) }
            signedBytes = attributes
        } else {
            signedBytes = signed.content
        }
        guard key.verify(signature: signed.signer.signature, message: signedBytes, digest: .sha256) else {
            return .failure(ReceiptFailure("CMS signature does not verify"))
        }

        let payload: ReceiptPayload
        do {
            payload = try ReceiptPayload(der: signed.content)
        } catch {
            return .failure(ReceiptFailure("payload is not a receipt field set: \(error)"))
        }
        guard payload.text(.appId) == expectedAppId else { return .failure(ReceiptFailure("app id differs")) }
        guard let field = payload[.attestedPublicKey],
            let certificate = field == attestedCertificate?.der ? attestedCertificate : try? Certificate(der: field),
            certificate.publicKey == attestedKey
        else { return .failure(ReceiptFailure("attested public key differs")) }
        guard payload.text(.receiptType) == expectedType else { return .failure(ReceiptFailure("receipt type is not \(expectedType)")) }
        return .success(Receipt(der: der, payload: payload))
    }

    /// Builds signer ← CMS certificates… ← anchor by names and verifies it; returns the signer's key.
    private func verifyPath(
        of signer: Certificate, among certificates: [Certificate], at time: Timestamp
    ) -> Result<ECPublicKey, ReceiptFailure> {
        var intermediates = [Certificate]()
        var current = signer
        while current.issuer != chain.anchor.certificate.subject {
            guard intermediates.count < Self.maxIntermediates,
                let issuer = certificates.first(where: { $0.subject == current.issuer && $0.der != current.der })
            else { return .failure(ReceiptFailure("no path from the signer to the receipt root")) }
            intermediates.append(issuer)
            current = issuer
        }
        switch chain.verify(leaf: signer, intermediates: intermediates, at: time, cacheLeaf: true) {
        case .failure(let failure): return .failure(ReceiptFailure("signer path: \(failure)"))
        case .success(let key?):
            guard signer.extension(.appleReceiptSigner) != nil else {
                return .failure(ReceiptFailure("signer lacks Apple's receipt marker extension"))
            }
            return .success(key)
        case .success(nil): return .failure(ReceiptFailure("signer key unavailable"))
        }
    }
}
