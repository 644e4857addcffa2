import AttestCore
import AttestCrypto
import Foundation

/// The parts of an X.509 v3 certificate that vary between the minted certificates; `signed(by:)` turns it into DER.
struct CertificateTemplate {
    var subject: [UInt8]
    var subjectPublicKeyInfo: [UInt8]
    var notBefore: Date
    var notAfter: Date
    var extensions: [RawExtension]

    /// A Name of single-attribute RDNs in the order given; countryName is a PrintableString, the rest UTF8String.
    static func name(_ attributes: [(oid: OID, value: String)]) -> [UInt8] {
        DER.sequence(attributes.map { attribute in
            let value = attribute.oid == .countryName ? DER.printableString(attribute.value) : DER.utf8String(attribute.value)
            return DER.set([DER.sequence([DER.oid(attribute.oid), value])])
        })
    }

    /// The certificate DER, with a random positive 64-bit serial number, signed ecdsa-with-`hash`. Apple signs
    /// credential certificates with SHA-256 even though the attestation CA key is P-384, and CA certificates with SHA-384.
    func signed(by issuerKey: ECKey, issuerName: [UInt8], hash: Digest) throws(MintError) -> [UInt8] {
        var serial = try randomBytes(8)
        serial[0] = serial[0] & 0x7F | 0x01
        let tbs = DER.sequence([
            DER.explicit(0, DER.integer(2)),
            DER.integer(magnitude: serial),
            hash.ecdsaAlgorithmIdentifier,
            issuerName,
            DER.sequence([DER.time(Timestamp(notBefore)), DER.time(Timestamp(notAfter))]),
            subject,
            subjectPublicKeyInfo,
            extensions.isEmpty ? [] : DER.explicit(3, DER.sequence(extensions.map(\.encoded))),
        ])
        let signature = try issuerKey.sign(digest: hash.hash(tbs))
        return DER.sequence([tbs, hash.ecdsaAlgorithmIdentifier, DER.bitString(signature)])
    }
}

extension Digest {
    /// The AlgorithmIdentifier of ECDSA with this digest (parameters absent, RFC 5758).
    var ecdsaAlgorithmIdentifier: [UInt8] {
        let oid: OID = switch self {
        case .sha256: .ecdsaWithSHA256
        case .sha384: .ecdsaWithSHA384
        case .sha512: .ecdsaWithSHA512
        }
        return DER.sequence([DER.oid(oid)])
    }
}
