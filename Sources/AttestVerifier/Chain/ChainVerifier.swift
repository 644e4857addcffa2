import AttestCore
import AttestCrypto

/// Verifies `leaf ← intermediates… ← anchor` with OpenSSL's ECDSA over the exact TBS bytes, in the order
/// RFC 5280 and docs/CHECK_ORDER.md require: names chain, every signature verifies, each issuer is a CA
/// allowed to sign (basicConstraints, pathLen, keyUsage), no certificate carries a critical extension we
/// do not process; only then validity periods, inclusive at both ends, at the given time.
public struct ChainVerifier: Sendable {
    public let anchor: TrustAnchor
    public let cache: VerifiedIssuerCache<ECPublicKey>

    /// Critical extensions this verifier processes; any other critical extension fails the path. Apple's
    /// App Attest leaf extensions are the verifier's own business (the nonce is checked, 100.8.6 is known),
    /// so they pass even if a future leaf marks them critical.
    static let understoodCriticalExtensions: Set<OID> = [
        .basicConstraints, .keyUsage, .extendedKeyUsage, .appleNonce, .appleAppAttestLeafInfo,
    ]

    public init(anchor: TrustAnchor, cache: VerifiedIssuerCache<ECPublicKey> = VerifiedIssuerCache()) {
        self.anchor = anchor
        self.cache = cache
    }

    /// Verifies the path. When `cacheLeaf` is set the leaf is cached like a CA certificate (for a receipt
    /// signer shared by many receipts) and its public key is returned.
    public func verify(
        leaf: Certificate, intermediates: [Certificate], at time: Timestamp, cacheLeaf: Bool = false
    ) -> Result<ECPublicKey?, ChainFailure> {
        let path = [leaf] + intermediates
        // Names first: each certificate's issuer is the next one's subject, the last one's is the anchor.
        for (i, certificate) in path.enumerated() {
            let issuerName = i + 1 < path.count ? path[i + 1].subject : anchor.certificate.subject
            guard certificate.issuer == issuerName else { return .failure(.invalid("issuer name mismatch at \(i)")) }
        }
        // Signatures and constraints, from the anchor down, reusing verified certificates.
        var issuerKey = anchor.key
        for i in stride(from: path.count - 1, through: 0, by: -1) {
            let certificate = path[i]
            let below = i > 0 ? i - 1 : nil
            let cacheable = below != nil || cacheLeaf
            if cacheable, let cached = cache.entry(for: certificate.der) {
                if let below {
                    guard cached.isCA else { return .failure(.invalid("certificate \(i): issuer is not a CA")) }
                    if let limit = cached.pathLength, below > limit {
                        return .failure(.invalid("certificate \(i): path length constraint exceeded"))
                    }
                }
                issuerKey = cached.key
                continue
            }
            let constraints: BasicConstraints?
            switch Self.checkStructure(certificate, asCAOver: below).map(\.constraints) {
            case .failure(let problem): return .failure(.invalid("certificate \(i): \(problem)"))
            case .success(let parsed): constraints = parsed
            }
            guard let digest = Digest(ecdsaSignatureAlgorithm: certificate.signatureAlgorithm),
                issuerKey.verify(signature: certificate.signature, message: certificate.tbsBytes, digest: digest)
            else { return .failure(.invalid("certificate \(i): signature does not verify")) }
            guard cacheable else { break }
            guard let key = ECPublicKey(subjectPublicKeyInfo: certificate.subjectPublicKeyInfo) else {
                return .failure(.invalid("certificate \(i): unsupported public key"))
            }
            let entry = VerifiedIssuerCache<ECPublicKey>.Entry(
                certificate: certificate, key: key, isCA: constraints?.isCA ?? false, pathLength: constraints?.pathLength)
            cache.insert(certificate.der, entry)
            issuerKey = key
        }
        for (i, certificate) in (path + [anchor.certificate]).enumerated() where !certificate.isValid(at: time) {
            return .failure(.expired("certificate \(i) not valid at \(time)"))
        }
        return .success(cacheLeaf ? issuerKey : nil)
    }

    /// Checks the critical-extension rule (against `understood`) for every certificate and, for an issuer
    /// with `below` certificates under it, the CA constraints. Returns its basicConstraints and keyUsage.
    static func checkStructure(
        _ certificate: Certificate, asCAOver below: Int?, understood: Set<OID> = understoodCriticalExtensions
    ) -> Result<(constraints: BasicConstraints?, usage: KeyUsage?), Problem> {
        for ext in certificate.extensions where ext.critical && !understood.contains(ext.oid) {
            return .failure(Problem("unhandled critical extension \(ext.oid)"))
        }
        var constraints: BasicConstraints? = nil
        if let ext = certificate.extension(.basicConstraints) {
            guard let parsed = try? BasicConstraints(der: ext.value) else { return .failure(Problem("malformed basicConstraints")) }
            constraints = parsed
        }
        var usage: KeyUsage? = nil
        if let ext = certificate.extension(.keyUsage) {
            guard let parsed = try? KeyUsage(der: ext.value) else { return .failure(Problem("malformed keyUsage")) }
            usage = parsed
        }
        guard let below else { return .success((constraints, usage)) }
        guard let constraints, constraints.isCA else { return .failure(Problem("issuer is not a CA")) }
        if let limit = constraints.pathLength, below > limit { return .failure(Problem("path length constraint exceeded")) }
        if let usage, !usage.contains(KeyUsage.keyCertSign) { return .failure(Problem("issuer key usage lacks keyCertSign")) }
        return .success((constraints, usage))
    }

    struct Problem: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
