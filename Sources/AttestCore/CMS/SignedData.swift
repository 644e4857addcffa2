/// A CMS (RFC 5652) ContentInfo holding SignedData, read in BER as Apple's receipt service encodes it
/// (indefinite lengths, a segmented eContent). Only what receipt verification needs, with exactly one
/// signer; the certificates are parsed as DER.
public struct SignedData: Sendable {
    /// The digestAlgorithms SET: must list the signer's digest algorithm.
    public let digestAlgorithms: [OID]
    public let encapsulatedContentType: OID
    /// The eContent octets (segments joined).
    public let content: [UInt8]
    public let certificates: [Certificate]
    public let signer: SignerInfo

    /// - Parameter known: an already parsed certificate with exactly these DER bytes, if the caller has one
    ///   (receipt signers recur on every receipt); otherwise the certificate is parsed.
    public init(ber bytes: [UInt8], known: ([UInt8]) -> Certificate? = { _ in nil }) throws(ASN1Error) {
        var top = ASN1Reader(bytes, rules: .ber)
        let contentInfo = try top.next(.sequence)
        try top.finish()
        var ci = try top.children(of: contentInfo)
        guard try ci.objectIdentifier(of: ci.next(.objectIdentifier)) == .signedData else {
            throw ASN1Error(.invalidValue, at: contentInfo.start)
        }
        var explicit = try ci.children(of: ci.next(.context(0)))
        try ci.finish()
        let signedData = try explicit.next(.sequence)
        try explicit.finish()

        var sd = try explicit.children(of: signedData)
        let version = try sd.integer(of: sd.next(.integer))
        guard version == 1 || version == 3 else { throw ASN1Error(.invalidValue, at: signedData.start) }
        var algorithms = try sd.children(of: sd.next(.set))
        var digestAlgorithms = [OID]()
        while !algorithms.isAtEnd {
            digestAlgorithms.append(try AlgorithmIdentifier.oid(algorithms.next(.sequence), in: algorithms))
        }
        self.digestAlgorithms = digestAlgorithms
        var encap = try sd.children(of: sd.next(.sequence))
        encapsulatedContentType = try encap.objectIdentifier(of: encap.next(.objectIdentifier))
        guard let eContent = try encap.nextIf(.context(0)) else { throw ASN1Error(.invalidValue, at: encap.position) }
        try encap.finish()
        var octets = try encap.children(of: eContent)
        content = try octets.octets(of: octets.next())
        try octets.finish()

        var certificates = [Certificate]()
        if let field = try sd.nextIf(.context(0)) {
            var list = try sd.children(of: field)
            while !list.isAtEnd {
                let element = try list.next(.sequence)
                let der = Array(bytes[element.encodedRange])
                if let certificate = known(der) {
                    certificates.append(certificate)
                } else {
                    certificates.append(try Certificate(der: der))
                }
            }
        }
        self.certificates = certificates
        _ = try sd.nextIf(.context(1))  // crls: not used for receipts
        var signers = try sd.children(of: sd.next(.set))
        try sd.finish()
        signer = try SignerInfo(signers.next(.sequence), in: signers)
        guard signers.isAtEnd else { throw ASN1Error(.invalidValue, at: signers.position) }
    }
}
