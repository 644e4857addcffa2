import AttestCore
import AttestCrypto

/// Decides one attestation: accepted with the verified key and receipt, or rejected with the first
/// failing step's code and reason, in the order of docs/CHECK_ORDER.md.
public struct AttestationVerifier: Sendable {
    public let trust: TrustConfiguration
    public let limits: VerifierLimits

    /// Apple's numbered steps after decoding, in order; the first failure decides.
    static let checks: [any AttestationCheck] = [
        CertificateChainCheck(),  // step 1
        NonceCheck(),  // steps 2–4
        KeyIdCheck(),  // step 5
        PublicKeyCheck(),  // WebAuthn §8.8
        RelyingPartyCheck(),  // step 6
        CounterZeroCheck(),  // step 7
        AAGUIDCheck(),  // step 8 and the environment policy
        CredentialIdCheck(),  // step 9
        ReceiptCheck(),  // the receipt
    ]

    public init(trust: TrustConfiguration, limits: VerifierLimits = VerifierLimits()) {
        self.trust = trust
        self.limits = limits
    }

    /// - Parameters:
    ///   - policy: the environments the app accepts.
    ///   - time: the instant certificates are checked against (the job's receivedAt).
    public func verify(
        _ request: AttestationRequest, policy: EnvironmentPolicy, at time: Timestamp
    ) -> Result<VerifiedAttestation, VerificationFailure> {
        let context: AttestationContext
        switch run(request, policy: policy, at: time, checks: Self.checks) {
        case .failure(let failure): return .failure(failure)
        case .success(let passed): context = passed
        }
        return .success(
            VerifiedAttestation(
                keyId: context.keyId, publicKey: context.leaf.publicKey, key: context.credentialKey, environment: context.environment,
                counter: context.authenticatorData.counter, receipt: context.receipt,
                extensions: context.authenticatorData.extensions, verificationTime: time))
    }

    /// Every step except the receipt, for `bench core`'s "without receipt" figure. Not a product mode: an
    /// attestation is only ever accepted with its receipt verified.
    @_spi(Benchmark) public func verifyWithoutReceipt(
        _ request: AttestationRequest, policy: EnvironmentPolicy, at time: Timestamp
    ) -> VerificationFailure? {
        let checks = Self.checks.filter { !($0 is ReceiptCheck) }
        if case .failure(let failure) = run(request, policy: policy, at: time, checks: checks) { return failure }
        return nil
    }

    private func run(
        _ request: AttestationRequest, policy: EnvironmentPolicy, at time: Timestamp, checks: [any AttestationCheck]
    ) -> Result<AttestationContext, VerificationFailure> {
        var context: AttestationContext
        switch decode(request, policy: policy, at: time) {
        case .failure(let failure): return .failure(failure)
        case .success(let decoded): context = decoded
        }
        for check in checks {
            if let failure = check.evaluate(&context) { return .failure(failure) }
        }
        return .success(context)
    }

    /// Steps 0–2: base64 inputs, the challenge binding, the CBOR object and the authenticator data.
    private func decode(
        _ request: AttestationRequest, policy: EnvironmentPolicy, at time: Timestamp
    ) -> Result<AttestationContext, VerificationFailure> {
        if let failure = limits.challengeFailure(request.challenge) { return .failure(failure) }
        guard request.attestationObject.utf8.count <= (limits.maxAttestationObjectBytes + 2) / 3 * 4 + 2 else {
            return .failure(VerificationFailure(.attestationObjectInvalid, .tooLarge, "attestation object too large"))
        }
        guard let objectBytes = Base64.decode(request.attestationObject) else {
            return .failure(VerificationFailure(.attestationObjectInvalid, .malformedBase64, "attestationObject is not base64"))
        }
        guard objectBytes.count <= limits.maxAttestationObjectBytes else {
            return .failure(VerificationFailure(.attestationObjectInvalid, .tooLarge, "attestation object too large"))
        }
        let keyId: [UInt8]
        switch KeyIdentifier.decode(request.keyId) {
        case .failure(let failure): return .failure(failure)
        case .success(let bytes): keyId = bytes
        }
        guard let clientDataHash = Base64.decode(request.clientDataHash) else {
            return .failure(VerificationFailure(.clientDataHashInvalid, .malformedBase64, "clientDataHash is not base64"))
        }
        if let challenge = request.challenge,
            !ChallengeBinding.attestationBinds(clientDataHash: clientDataHash, challenge: challenge)
        {
            return .failure(
                VerificationFailure(.clientDataHashInvalid, .challengeMismatch, "clientDataHash does not bind the challenge"))
        }
        let object: AttestationObject
        do {
            object = try AttestationObject(cbor: objectBytes, maxDepth: limits.maxCBORDepth)
        } catch {
            let reason: FailureReason
            switch error {
            case .malformed: reason = .malformedCBOR
            case .trailingData: reason = .trailingData
            case .unsupportedFormat: reason = .unsupportedFormat
            case .missingCertificates: reason = .missingCertificates
            }
            return .failure(VerificationFailure(.attestationObjectInvalid, reason, "attestation object: \(error)"))
        }
        let authenticatorData: AuthenticatorData
        do {
            authenticatorData = try AuthenticatorData.attestation(object.authenticatorData, maxDepth: limits.maxCBORDepth)
        } catch {
            let reason: FailureReason = error == .trailingData ? .trailingData : .malformedCBOR
            return .failure(VerificationFailure(.attestationObjectInvalid, reason, "authenticator data: \(error)"))
        }
        // A COSE key whose coordinates are no P-256 point is a bad COSE key, decided here rather than by a
        // later nonce or key mismatch. AttestCore parses it without libcrypto; OpenSSL's import checks the point,
        // and the key it makes is the one an accepted attestation hands on for assertions.
        guard let credentialKey = ECPublicKey(p256Point: authenticatorData.credential!.publicKey) else {
            return .failure(
                VerificationFailure(.attestationObjectInvalid, .malformedCBOR, "authenticator data: COSE key is not a P-256 point"))
        }
        return .success(
            AttestationContext(
                appId: request.appId, keyId: keyId, clientDataHash: clientDataHash, object: object,
                authenticatorData: authenticatorData, credential: authenticatorData.credential!, credentialKey: credentialKey,
                policy: policy,
                time: time, trust: trust))
    }
}
