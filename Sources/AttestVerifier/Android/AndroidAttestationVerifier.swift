import AttestCore
import AttestCrypto

/// Decides one Android key attestation: accepted with the attested key and its KeyDescription, or rejected
/// with the first failing step's code and reason, in the order of docs/CHECK_ORDER.md (Android).
///
/// Offline: nothing is fetched per job. The status list is the caller's (the worker keeps the one it stores
/// fresh off the job path), else the one in ``AndroidTrust``.
public struct AndroidAttestationVerifier: Sendable {
    public let chains: AndroidChainVerifier
    public let limits: VerifierLimits

    /// A device certificate is well under 2 KiB (an ML-DSA-65 leaf about 3 KiB); 16 KiB bounds a parse.
    public static let maxCertificateBytes = 16 * 1024

    /// The steps after decoding, in order; the first failure decides.
    static let checks: [any AndroidAttestationCheck] = [
        AndroidChainCheck(),  // step 2
        AndroidRevocationCheck(),  // step 3
        KeyDescriptionCheck(),  // step 4
        AndroidChallengeCheck(),  // step 5
        SecurityLevelCheck(),  // step 6
        KeyOriginCheck(),  // step 7
        ApplicationIdCheck(),  // step 8
        RootOfTrustCheck(),  // step 9
        OSLevelCheck(),  // step 10
    ]

    public init(trust: AndroidTrust, limits: VerifierLimits = VerifierLimits()) {
        chains = AndroidChainVerifier(trust: trust)
        self.limits = limits
    }

    /// - Parameters:
    ///   - statusList: the list to check the chain against; nil: the trust's.
    ///   - time: the instant certificates are checked against (the job's receivedAt).
    public func verify(
        _ request: AndroidAttestationRequest, policy: AndroidPolicy, statusList: AndroidStatusList? = nil, at time: Timestamp
    ) -> Result<VerifiedAndroidAttestation, VerificationFailure> {
        var context: AndroidAttestationContext
        switch decode(request, policy: policy, statusList: statusList ?? chains.trust.statusList, at: time) {
        case .failure(let failure): return .failure(failure)
        case .success(let decoded): context = decoded
        }
        for check in Self.checks {
            if let failure = check.evaluate(&context) { return .failure(failure) }
        }
        let spki = context.leaf.subjectPublicKeyInfo
        return .success(
            VerifiedAndroidAttestation(
                keyId: Base64.encode(Digest.sha256.hash(spki)), subjectPublicKeyInfo: spki, keyDescription: context.keyDescription,
                verificationTime: time))
    }

    /// Step 1: the challenge and every certificate are base64 within their bounds, and every certificate
    /// parses as strict DER X.509 v3.
    private func decode(
        _ request: AndroidAttestationRequest, policy: AndroidPolicy, statusList: AndroidStatusList?, at time: Timestamp
    ) -> Result<AndroidAttestationContext, VerificationFailure> {
        if let failure = limits.challengeFailure(request.challenge) { return .failure(failure) }
        guard let challenge = Base64.decode(request.challenge) else {
            return .failure(VerificationFailure(.challengeInvalid, .malformedBase64, "challenge is not base64"))
        }
        guard request.certificateChain.count >= 2 else {
            return .failure(VerificationFailure(.attestationObjectInvalid, .missingCertificates, "certificateChain holds fewer than 2 certificates"))
        }
        guard request.certificateChain.count <= AndroidChainVerifier.maxCertificates else {
            return .failure(
                VerificationFailure(
                    .attestationObjectInvalid, .tooLarge, "certificateChain holds more than \(AndroidChainVerifier.maxCertificates) certificates"))
        }
        var chain = [Certificate]()
        chain.reserveCapacity(request.certificateChain.count)
        for (i, text) in request.certificateChain.enumerated() {
            guard text.utf8.count <= (Self.maxCertificateBytes + 2) / 3 * 4 + 2 else {
                return .failure(VerificationFailure(.attestationObjectInvalid, .tooLarge, "certificate \(i) over \(Self.maxCertificateBytes) bytes"))
            }
            guard let der = Base64.decode(text) else {
                return .failure(VerificationFailure(.attestationObjectInvalid, .malformedBase64, "certificate \(i) is not base64"))
            }
            // A certificate verified before is the same parse again: the shared ones are not parsed per job.
            if i > 0, let known = chains.cache.certificate(for: der) {
                chain.append(known)
                continue
            }
            do {
                chain.append(try Certificate(der: der))
            } catch {
                return .failure(VerificationFailure(.attestationObjectInvalid, .malformedCertificate, "certificate \(i): \(error)"))
            }
        }
        return .success(
            AndroidAttestationContext(chain: chain, challenge: challenge, policy: policy, time: time, chains: chains, statusList: statusList))
    }
}
