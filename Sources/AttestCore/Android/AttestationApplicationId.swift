/// The app that asked for the attestation, as the Android framework states it: the packages sharing the
/// calling uid and the SHA-256 digests of their signing certificates (AttestationApplicationId).
public struct AttestationApplicationId: Sendable, Equatable {
    public struct Package: Sendable, Equatable {
        public var name: String
        public var version: Int64
    }

    public var packages: [Package]
    public var signatureDigests: [[UInt8]]

    /// A uid shares a handful of packages and signers at most; more is no device's encoding.
    public static let maxEntries = 64

    /// Parses the DER the authorization list's OCTET STRING carries.
    init(der: [UInt8]) throws(ASN1Error) {
        var top = ASN1Reader(der)
        let sequence = try top.next(.sequence)
        try top.finish()
        var r = try top.children(of: sequence)
        var infos = try r.children(of: r.next(.set))
        var digests = try r.children(of: r.next(.set))
        try r.finish()
        packages = []
        while !infos.isAtEnd {
            guard packages.count < Self.maxEntries else { throw ASN1Error(.invalidValue, at: infos.position) }
            var info = try infos.children(of: infos.next(.sequence))
            let nameElement = try info.next(.octetString)
            guard let name = String(validating: try info.octets(of: nameElement), as: UTF8.self), !name.isEmpty else {
                throw ASN1Error(.invalidValue, at: nameElement.start)
            }
            let version = try info.integer(of: info.next(.integer))
            try info.finish()
            packages.append(Package(name: name, version: Int64(version)))
        }
        signatureDigests = []
        while !digests.isAtEnd {
            guard signatureDigests.count < Self.maxEntries else { throw ASN1Error(.invalidValue, at: digests.position) }
            signatureDigests.append(try digests.octets(of: digests.next(.octetString)))
        }
    }
}
