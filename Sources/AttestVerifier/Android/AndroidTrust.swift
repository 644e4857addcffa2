import AttestCore
import AttestCrypto

/// The roots an Android attestation chain may end in, pinned by the SHA-256 of their SubjectPublicKeyInfo,
/// and the certificate status list the chain is checked against.
///
/// Pinned by key, not by certificate bytes: Google's RSA root key sits in several root certificates (2016,
/// 2019, 2022; a 2025 Pixel's chain ends in the 2019 one while Google publishes the 2022 one), and a root is
/// a trust anchor, its key and name, as RFC 5280 section 6.1.1 treats it.
public struct AndroidTrust: Sendable {
    /// SHA-256 of each trusted root's SubjectPublicKeyInfo DER.
    public let rootKeys: Set<[UInt8]>
    /// True when the roots are Google's pinned hardware attestation roots.
    public let isGoogle: Bool
    /// Google's certificate status list (revoked or suspended serial numbers); nil: none loaded, so no
    /// certificate is found listed (the worker refuses or warns per its stale-list setting before that).
    public var statusList: AndroidStatusList?

    /// Google's RSA hardware attestation root key (every root certificate of 2016-2022) and its ECDSA P-384
    /// root key "Key Attestation CA1" (2025), SHA-256 of their SubjectPublicKeyInfo.
    public static let googleRootKeys: [String] = [
        "feb2ea7551ee316ed4bb443c8293b884dbfdea40b603ee3e4f4a897e4580fbae",
        "3ee44512a1af2beb39c889490c60ea3f82e43f5d5a5532f5ab9419f676cd07ec",
    ]

    public static var google: AndroidTrust {
        AndroidTrust(rootKeys: Set(googleRootKeys.map { Hex.decode($0)! }), isGoogle: true)
    }

    private init(rootKeys: Set<[UInt8]>, isGoogle: Bool, statusList: AndroidStatusList? = nil) {
        self.rootKeys = rootKeys
        self.isGoogle = isGoogle
        self.statusList = statusList
    }

    /// Roots that replace Google's (tests, load generators): the keys of the certificates in `pem`.
    public init(rootCertificatesPEM pem: String) throws(TrustAnchor.LoadError) {
        guard let blocks = PEM.decodeAll(pem), !blocks.isEmpty else { throw .notAPEMCertificate }
        var keys = Set<[UInt8]>()
        for der in blocks {
            do {
                keys.insert(Digest.sha256.hash(try Certificate(der: der).subjectPublicKeyInfo))
            } catch {
                throw .unparsable("\(error)")
            }
        }
        self.init(rootKeys: keys, isGoogle: keys == AndroidTrust.google.rootKeys)
    }

    /// Whether `certificate`'s key is one of the pinned roots.
    public func isRoot(_ certificate: Certificate) -> Bool {
        rootKeys.contains(Digest.sha256.hash(certificate.subjectPublicKeyInfo))
    }
}
