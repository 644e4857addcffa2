import AttestCore
import AttestCrypto

/// Decides one request signed by an attested Android key, in the order of docs/CHECK_ORDER.md (Android
/// assertion): decode, challenge binding, known key, key algorithm, signature.
///
/// There is no counter in an Android signature: replay protection is the single-use challenge the client
/// data must carry (worker-issued and consumed by the worker, or the backend's).
public struct AndroidAssertionVerifier: Sendable {
    /// A signed request body; bounded well under the message size limit so the hash and the binding search
    /// stay small.
    public static let maxClientDataBytes = 64 * 1024
    /// RSA-8192 signatures are 1,024 bytes, DER ECDSA P-384 ones at most 104.
    public static let maxSignatureBytes = 1024

    public let limits: VerifierLimits

    public init(limits: VerifierLimits = VerifierLimits()) {
        self.limits = limits
    }

    /// nil when the request is accepted. `storedKey`: the key attested for its keyId, nil when unknown.
    public func verify(_ request: AndroidAssertionRequest, storedKey: AttestedAndroidKey?) -> VerificationFailure? {
        if let failure = limits.challengeFailure(request.challenge) { return failure }
        let keyId: [UInt8]
        switch KeyIdentifier.decode(request.keyId) {
        case .failure(let failure): return failure
        case .success(let bytes): keyId = bytes
        }
        guard request.signature.utf8.count <= (Self.maxSignatureBytes + 2) / 3 * 4 + 2, let signature = Base64.decode(request.signature) else {
            let tooLarge = request.signature.utf8.count > (Self.maxSignatureBytes + 2) / 3 * 4 + 2
            return VerificationFailure(.assertionInvalid, tooLarge ? .tooLarge : .malformedBase64, "signature is not usable base64")
        }
        guard request.clientData.utf8.count <= (Self.maxClientDataBytes + 2) / 3 * 4 + 2, let clientData = Base64.decode(request.clientData) else {
            let tooLarge = request.clientData.utf8.count > (Self.maxClientDataBytes + 2) / 3 * 4 + 2
            return VerificationFailure(.clientDataHashInvalid, tooLarge ? .tooLarge : .malformedBase64, "clientData is not usable base64")
        }
        if let challenge = request.challenge, !ChallengeBinding.assertionBinds(clientData: clientData, challenge: challenge) {
            return VerificationFailure(.clientDataHashInvalid, .challengeMismatch, "clientData does not contain the challenge")
        }
        guard let storedKey else {
            return VerificationFailure(.reattestRequired, .unknownKey, "no attested key for this keyId")
        }
        guard ConstantTime.equal(storedKey.keyId, keyId) else {
            return VerificationFailure(.keyIdInvalid, .keyIdMismatch, "keyId is not the hash of the attested key")
        }
        guard let key = storedKey.key else {
            return VerificationFailure(.androidValidationFailed, .unsupportedKeyAlgorithm, "the attested key's algorithm cannot verify signatures here")
        }
        guard key.verify(requestSignature: signature, over: clientData) else {
            return VerificationFailure(.assertionInvalid, .signatureInvalid, "the signature does not verify under the attested key")
        }
        return nil
    }
}
