import Foundation

/// The parts of an X.509 v3 certificate that vary between the minted certificates; `signed(by:)` turns it into DER.
struct CertificateTemplate {
    /// The signature algorithm used by the issuer. Apple signs credential certificates with ecdsa-with-SHA256 even
    /// though the attestation CA key is P-384, and CA certificates with ecdsa-with-SHA384.
    enum SignatureHash {
        case sha256, sha384

        var algorithmIdentifier: [UInt8] {
            DER.sequence([self == .sha256 ? OIDs.ecdsaWithSHA256 : OIDs.ecdsaWithSHA384])
        }

        func digest(_ bytes: [UInt8]) -> [UInt8] {
            self == .sha256 ? Digest.sha256(bytes) : Digest.sha384(bytes)
        }
    }

    var subject: [UInt8]
    var subjectPublicKeyInfo: [UInt8]
    var notBefore: Date
    var notAfter: Date
    var extensions: [RawExtension]

    /// A Name of single-attribute RDNs in the order given; countryName is a PrintableString, the rest UTF8String.
    static func name(_ attributes: [(oid: [UInt8], value: String)]) -> [UInt8] {
        DER.sequence(attributes.map { attribute in
            let value = attribute.oid == OIDs.countryName ? DER.printableString(attribute.value) : DER.utf8String(attribute.value)
            return DER.set([DER.sequence([attribute.oid, value])])
        })
    }

    /// The certificate DER, with a random positive 64-bit serial number.
    func signed(by issuerKey: ECKey, issuerName: [UInt8], hash: SignatureHash) throws(MintError) -> [UInt8] {
        var serial = try randomBytes(8)
        serial[0] = serial[0] & 0x7F | 0x01
        let tbs = DER.sequence([
            DER.explicit(0, DER.integer(2)),
            DER.integer(magnitude: serial),
            hash.algorithmIdentifier,
            issuerName,
            DER.sequence([DER.time(UTCDateTime(notBefore)), DER.time(UTCDateTime(notAfter))]),
            subject,
            subjectPublicKeyInfo,
            extensions.isEmpty ? [] : DER.explicit(3, DER.sequence(extensions.map(\.encoded))),
        ])
        let signature = try issuerKey.sign(digest: hash.digest(tbs))
        return DER.sequence([tbs, hash.algorithmIdentifier, DER.bitString(signature)])
    }
}
