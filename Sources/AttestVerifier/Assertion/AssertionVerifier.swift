import AttestCore
import AttestCrypto

/// Decides one assertion in the order of docs/CHECK_ORDER.md: decode, parse, known key, then the checks
/// (signature, rpIdHash, counter); the first failure decides.
public struct AssertionVerifier: Sendable {
    public let limits: VerifierLimits

    /// The steps after the key lookup, in order.
    static let checks: [any AssertionCheck] = [
        SignatureCheck(),  // step 4
        AssertionRelyingPartyCheck(),  // step 5
        CounterIncreaseCheck(),  // step 6
    ]

    public init(limits: VerifierLimits = VerifierLimits()) {
        self.limits = limits
    }

    /// - Parameter device: the stored state for the request's keyId, or nil when the key is unknown.
    public func verify(_ request: AssertionRequest, device: StoredDevice?) -> Result<VerifiedAssertion, VerificationFailure> {
        let decoded: Decoded
        switch decode(request) {
        case .failure(let failure): return .failure(failure)
        case .success(let value): decoded = value
        }
        // Step 3: a key attested earlier (after parsing, so a malformed assertion is reported as such).
        guard let device else {
            return .failure(VerificationFailure(.reattestRequired, .unknownKey, "no attested key for this keyId"))
        }
        let context = AssertionContext(
            teamId: request.teamId, bundleId: request.bundleId, keyId: decoded.keyId, clientDataHash: decoded.clientDataHash,
            object: decoded.object, authenticatorData: decoded.authenticatorData, device: device)
        for check in Self.checks {
            if let failure = check.evaluate(context) { return .failure(failure) }
        }
        return .success(
            VerifiedAssertion(
                keyId: decoded.keyId, counter: decoded.authenticatorData.counter, extensions: decoded.authenticatorData.extensions))
    }

    /// What steps 1–2 decode, before the key lookup.
    private struct Decoded {
        let keyId: [UInt8]
        let clientDataHash: [UInt8]
        let object: AssertionObject
        let authenticatorData: AuthenticatorData
    }

    /// Steps 1–2: base64 inputs and the challenge binding, then the CBOR object and its authenticator data.
    private func decode(_ request: AssertionRequest) -> Result<Decoded, VerificationFailure> {
        if let failure = limits.challengeFailure(request.challenge) { return .failure(failure) }
        let maxText = (limits.maxAssertionBytes + 2) / 3 * 4 + 2
        guard request.assertion.utf8.count <= maxText, let assertionBytes = Base64.decode(request.assertion) else {
            let tooLarge = request.assertion.utf8.count > maxText
            return .failure(
                VerificationFailure(.assertionInvalid, tooLarge ? .tooLarge : .malformedBase64, "assertion is not usable base64"))
        }
        guard assertionBytes.count <= limits.maxAssertionBytes else {
            return .failure(VerificationFailure(.assertionInvalid, .tooLarge, "assertion too large"))
        }
        let keyId: [UInt8]
        switch KeyIdentifier.decode(request.keyId) {
        case .failure(let failure): return .failure(failure)
        case .success(let bytes): keyId = bytes
        }
        let clientDataHash: [UInt8]
        switch request.clientData {
        case .hash(let text):
            guard let hash = Base64.decode(text) else {
                return .failure(VerificationFailure(.clientDataHashInvalid, .malformedBase64, "clientDataHash is not base64"))
            }
            if let challenge = request.challenge,
                !ChallengeBinding.assertionBinds(clientDataHash: hash, challenge: challenge)
            {
                return .failure(VerificationFailure(.clientDataHashInvalid, .challengeMismatch, "clientDataHash does not bind the challenge"))
            }
            clientDataHash = hash
        case .raw(let text):
            guard let raw = Base64.decode(text) else {
                return .failure(VerificationFailure(.clientDataHashInvalid, .malformedBase64, "clientData is not base64"))
            }
            if let challenge = request.challenge, !ChallengeBinding.assertionBinds(clientData: raw, challenge: challenge) {
                return .failure(VerificationFailure(.clientDataHashInvalid, .challengeMismatch, "clientData does not contain the challenge"))
            }
            clientDataHash = Digest.sha256.hash(raw)
        }
        let object: AssertionObject
        do {
            object = try AssertionObject(cbor: assertionBytes, maxDepth: limits.maxCBORDepth)
        } catch {
            let reason: FailureReason = error == .trailingData ? .trailingData : .malformedCBOR
            return .failure(VerificationFailure(.assertionInvalid, reason, "assertion: \(error)"))
        }
        let authenticatorData: AuthenticatorData
        do {
            authenticatorData = try AuthenticatorData.assertion(object.authenticatorData, maxDepth: limits.maxCBORDepth)
        } catch {
            let reason: FailureReason = error == .trailingData ? .trailingData : .malformedCBOR
            return .failure(VerificationFailure(.assertionInvalid, reason, "authenticator data: \(error)"))
        }
        return .success(Decoded(keyId: keyId, clientDataHash: clientDataHash, object: object, authenticatorData: authenticatorData))
    }
}
