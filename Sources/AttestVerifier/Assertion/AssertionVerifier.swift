import AttestCore
import AttestCrypto

/// Decides one assertion in the order of docs/CHECK_ORDER.md: decode, parse, known key, signature, rpIdHash,
/// counter. The signature is ES256 over the message nonce = SHA256(authenticatorData ‖ clientDataHash), so
/// the digest verified is SHA256(nonce); DER signatures only, high-S accepted.
public struct AssertionVerifier: Sendable {
    public let limits: VerifierLimits

    public init(limits: VerifierLimits = VerifierLimits()) {
        self.limits = limits
    }

    /// - Parameter device: the stored state for the request's keyId, or nil when the key is unknown.
    public func verify(_ request: AssertionRequest, device: StoredDevice?) -> Result<VerifiedAssertion, VerificationFailure> {
        // Step 1: base64 inputs.
        if let failure = limits.challengeFailure(request.challenge) { return .failure(failure) }
        guard request.assertion.utf8.count <= (limits.maxAssertionBytes + 2) / 3 * 4 + 2,
            let assertionBytes = Base64.decode(request.assertion)
        else {
            let tooLarge = request.assertion.utf8.count > (limits.maxAssertionBytes + 2) / 3 * 4 + 2
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

        // Step 2: the CBOR object and its authenticator data (before the key lookup and the signature).
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

        // Step 3: a key attested earlier.
        guard let device else {
            return .failure(VerificationFailure(.reattestRequired, .unknownKey, "no attested key for this keyId"))
        }
        // Step 4: the signature over SHA256(nonce).
        let nonce = Digest.sha256(object.authenticatorData, clientDataHash)
        guard device.publicKey.verify(signature: object.signature, digest: Digest.sha256.hash(nonce)) else {
            return .failure(VerificationFailure(.assertionInvalid, .signatureInvalid, "signature does not verify"))
        }
        // Step 5: the App ID.
        guard ConstantTime.equal(authenticatorData.rpIdHash, Digest.sha256.hash(Array(request.appId.utf8))) else {
            return .failure(VerificationFailure(.assertionInvalid, .rpIdMismatch, "rpIdHash is not SHA-256 of the App ID"))
        }
        // Step 6: the counter moves forward.
        guard authenticatorData.counter > device.counter else {
            return .failure(
                VerificationFailure(
                    .assertionInvalid, .counterNotIncreasing,
                    "counter \(authenticatorData.counter) is not above \(device.counter)"))
        }
        return .success(
            VerifiedAssertion(keyId: keyId, counter: authenticatorData.counter, extensions: authenticatorData.extensions))
    }
}
