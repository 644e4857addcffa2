import AttestCore
import AttestJobs

extension Verdict {
    /// Signs a token for an accepted verdict and records it with its expiry; rejected verdicts never carry
    /// one, so this leaves them unchanged. The worker and the offline `verify` both call this, so their
    /// tokens agree claim for claim. `iat` is the verdict's `verifiedAt`, in whole seconds. A `limitedUse`
    /// token carries the claim that makes it consumable once, and a jti of its own (``LimitedUse``).
    public mutating func attachToken(
        signer: TokenSigner, lifetimeSeconds: Int64 = TokenSigner.defaultLifetimeSeconds, deviceId: String? = nil,
        riskCategory: String? = nil, limitedUse: Bool = false, customClaims: [(String, JSONValue)] = []
    ) throws(TokenSigner.SigningFailed) {
        guard ok, jobId != nil, keyId != nil else { return }
        let issuedAt = verifiedAt.seconds
        let expires = issuedAt + min(max(lifetimeSeconds, 1), TokenSigner.maxLifetimeSeconds)
        let claims = TokenClaims.build(
            for: self, issuer: signer.issuer, issuedAt: issuedAt, expiresAt: expires, deviceId: deviceId,
            riskCategory: riskCategory, limitedUse: limitedUse, custom: customClaims)
        token = try signer.sign(claims: claims)
        expiresAt = Timestamp(seconds: expires)
    }
}
