import AttestCore
import AttestCrypto

/// Verifies an Android attestation chain, leaf first and root last, as docs/CHECK_ORDER.md (Android step 2)
/// states: names chain; the last certificate's key is a pinned root key and it is self-issued; every
/// signature verifies (ECDSA or RSA PKCS #1 v1.5, the root's own included) under its issuer's key, from the
/// root down; the CA certificates are CAs allowed to sign; only the leaf carries a KeyDescription; no
/// certificate carries a critical extension this verifier does not process; only then the validity of
/// each certificate between the leaf and the root at the job's time, inclusive at both ends.
///
/// Three rules follow what real devices produce rather than a web PKI. The leaf's own issuer (the device's
/// attestation key certificate) may be an end-entity certificate (Sony's factory-provisioned keys are
/// `CA:FALSE`, `digitalSignature`: the keystore signs the leaf with that key all the same); so that an
/// attested key, which its app can make sign any bytes, can never stand in for it and certify a forged
/// leaf, no certificate above the leaf may carry a KeyDescription. The leaf's validity is not checked: the
/// device sets it (the app chooses it with the key's parameters, and the device's clock may be off), so it
/// proves nothing. The root's validity is not checked either: a pinned root is a trust anchor, a key (the
/// 2016 certificate of Google's RSA root key expired in May 2026, the same key's 2019 and 2022 did not).
/// Google's own validator (android/keyattestation) takes the same three positions.
public struct AndroidChainVerifier: Sendable {
    /// Chains seen on devices hold 3 to 5 certificates (remote key provisioning adds one); a longer one is
    /// refused before any signature is checked.
    public static let maxCertificates = 10

    public let trust: AndroidTrust
    /// Certificates above the leaf already verified up to a pinned root: Google's roots and intermediates
    /// (and a factory batch's attestation key) are shared by many devices, so a warm chain verifies the
    /// leaf and its device's own certificates only. Validity periods are checked every time.
    public let cache: VerifiedIssuerCache<SignatureKey>

    static let understoodCriticalExtensions: Set<OID> = [.basicConstraints, .keyUsage, .extendedKeyUsage, .androidKeyDescription]

    public init(trust: AndroidTrust, cache: VerifiedIssuerCache<SignatureKey> = VerifiedIssuerCache()) {
        self.trust = trust
        self.cache = cache
    }

    /// nil when the chain is valid at `time`; `chain` holds 2 to ``maxCertificates`` certificates.
    public func verify(_ chain: [Certificate], at time: Timestamp) -> VerificationFailure? {
        precondition((2...Self.maxCertificates).contains(chain.count), "the caller bounds the chain")
        let rootIndex = chain.count - 1
        let root = chain[rootIndex]
        for i in 0..<rootIndex where chain[i].issuer != chain[i + 1].subject {
            return Self.invalid("certificate \(i): issuer name mismatch")
        }
        guard trust.isRoot(root) else {
            return VerificationFailure(.androidValidationFailed, .untrustedRoot, "the chain does not end in a pinned root key")
        }
        guard root.issuer == root.subject else { return Self.invalid("certificate \(rootIndex): the root is not self-issued") }
        // From the root down; every issuer but the leaf's own (unless that is the root) must be a CA.
        var issuerKey: SignatureKey? = nil
        for i in stride(from: rootIndex, through: 0, by: -1) {
            let certificate = chain[i]
            let mustBeCA = i >= 2 || i == rootIndex
            if i > 0, let cached = cache.entry(for: certificate.der) {
                if mustBeCA {
                    guard cached.isCA else { return Self.invalid("certificate \(i): issuer is not a CA") }
                    if let limit = cached.pathLength, i - 1 > limit { return Self.invalid("certificate \(i): path length constraint exceeded") }
                }
                issuerKey = cached.key
                continue
            }
            let authority: Authority
            switch Self.structure(certificate, index: i, mustBeCA: mustBeCA) {
            case .failure(let problem): return Self.invalid("certificate \(i): \(problem.description)")
            case .success(let parsed): authority = parsed
            }
            let key = i > 0 ? SignatureKey(subjectPublicKeyInfo: certificate.subjectPublicKeyInfo, algorithm: certificate.keyAlgorithm) : nil
            guard let signer = i == rootIndex ? key : issuerKey else {
                return Self.invalid("certificate \(rootIndex): unsupported root key")
            }
            guard signer.verify(certificateSignature: certificate.signature, over: certificate.tbsBytes, algorithm: certificate.signatureAlgorithm)
            else { return Self.invalid("certificate \(i): signature does not verify") }
            guard i > 0 else { break }
            guard let key else { return Self.invalid("certificate \(i): unsupported issuer key") }
            cache.insert(
                certificate.der,
                VerifiedIssuerCache<SignatureKey>.Entry(
                    certificate: certificate, key: key, isCA: authority.mayIssue, pathLength: authority.pathLength))
            issuerKey = key
        }
        for (i, certificate) in chain.enumerated() where i > 0 && i < rootIndex && !certificate.isValid(at: time) {
            return VerificationFailure(.androidValidationFailed, .certificateExpired, "certificate \(i) not valid at \(time)")
        }
        return nil
    }

    /// What a certificate's extensions allow: whether it may issue certificates (a CA whose key usage, when
    /// stated, includes keyCertSign) and its path length limit.
    struct Authority {
        let mayIssue: Bool
        let pathLength: Int?
    }

    /// ``ChainVerifier/checkStructure(_:asCAOver:understood:)`` (where `mustBeCA`, with `index - 1`
    /// intermediates below), then the rule that only the leaf carries a KeyDescription.
    static func structure(_ certificate: Certificate, index: Int, mustBeCA: Bool) -> Result<Authority, ChainVerifier.Problem> {
        let parsed: (constraints: BasicConstraints?, usage: KeyUsage?)
        switch ChainVerifier.checkStructure(certificate, asCAOver: mustBeCA ? index - 1 : nil, understood: understoodCriticalExtensions) {
        case .failure(let problem): return .failure(problem)
        case .success(let value): parsed = value
        }
        if index > 0, certificate.extension(.androidKeyDescription) != nil {
            return .failure(ChainVerifier.Problem("an attested key's certificate is not an issuer"))
        }
        return .success(
            Authority(
                mayIssue: parsed.constraints?.isCA == true && (parsed.usage?.contains(KeyUsage.keyCertSign) ?? true),
                pathLength: parsed.constraints?.pathLength))
    }

    static func invalid(_ message: String) -> VerificationFailure {
        VerificationFailure(.androidValidationFailed, .certificateChainInvalid, message)
    }
}
