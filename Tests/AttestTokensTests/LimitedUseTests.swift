import AttestCore
import AttestCrypto
import AttestJobs
import AttestTokens
import AttestVerifier
import Testing

/// Limited-use tokens (issue 28): the claim, the jti that never repeats, and what consumption decides
/// before the ledger (``TokenConsumption``).
@Suite struct LimitedUseTests {
    static let app = AppIdentity(teamId: "A1B2C3D4E5", bundleId: "com.example.app")

    static func token(limitedUse: Bool, signer: TokenSigner? = nil, lifetime: Int64 = 600, custom: [(String, JSONValue)] = []) throws
        -> String
    {
        var verdict = TokenTests.accepted()
        try verdict.attachToken(
            signer: signer ?? TokenTests.signer(TokenKeys.current), lifetimeSeconds: lifetime, limitedUse: limitedUse,
            customClaims: custom)
        return try #require(verdict.token)
    }

    static func claims(_ token: String) throws -> JSONValue {
        try TokenTests.verifier(try TokenTests.signer(TokenKeys.current).jwks).verify(token)
    }

    @Test func limitedTokenCarriesTheClaimAndAJtiOfItsOwn() throws {
        let claims = try Self.claims(try Self.token(limitedUse: true))
        #expect(claims["limitedUse"] == .bool(true))
        #expect(LimitedUse.isLimitedUse(claims))
        let jti = try #require(claims["jti"]?.stringValue)
        #expect(jti != "job-1" && jti.utf8.count == 22)
        #expect(jti == LimitedUse.jti(teamId: Self.app.teamId, bundleId: Self.app.bundleId, jobId: "job-1", issuedAt: TokenTests.issuedAt.seconds))
        // The same verdict signs the same jti (a redelivery republishes it; offline verify agrees) …
        #expect(try Self.claims(try Self.token(limitedUse: true))["jti"]?.stringValue == jti)
        // … and another app, jobId or issue second never does.
        #expect(LimitedUse.jti(teamId: "Z9Y8X7W6V5", bundleId: Self.app.bundleId, jobId: "job-1", issuedAt: TokenTests.issuedAt.seconds) != jti)
        #expect(LimitedUse.jti(teamId: Self.app.teamId, bundleId: Self.app.bundleId, jobId: "job-2", issuedAt: TokenTests.issuedAt.seconds) != jti)
        #expect(LimitedUse.jti(teamId: Self.app.teamId, bundleId: Self.app.bundleId, jobId: "job-1", issuedAt: TokenTests.issuedAt.seconds + 1) != jti)
        // Separators keep fields apart: "a" + "bc" is not "ab" + "c".
        #expect(LimitedUse.jti(teamId: "T", bundleId: "ab", jobId: "c", issuedAt: 1) != LimitedUse.jti(teamId: "T", bundleId: "a", jobId: "bc", issuedAt: 1))
    }

    @Test func ordinaryTokensAreAsBefore() throws {
        let claims = try Self.claims(try Self.token(limitedUse: false))
        #expect(claims["limitedUse"] == nil)
        #expect(claims["jti"] == .string("job-1"))
        #expect(!LimitedUse.isLimitedUse(claims))
    }

    @Test func theClaimCannotBeForgedByACustomClaim() throws {
        #expect(throws: CustomClaims.Invalid.self) { try CustomClaims(text: #"{"limitedUse": true}"#) }
        // Claims stored before the name was reserved are dropped from the token, never shadowing the worker's.
        let claims = try Self.claims(try Self.token(limitedUse: false, custom: [("limitedUse", .bool(true)), ("tier", .string("gold"))]))
        #expect(claims["limitedUse"] == nil && claims["tier"] == .string("gold"))
        #expect(!LimitedUse.isLimitedUse(.object([("limitedUse", .string("true"))])))
        #expect(!LimitedUse.isLimitedUse(.object([("limitedUse", .int(1))])))
    }

    @Test func jobsAskWithABooleanOnly() throws {
        func parse(_ extra: String) -> Result<Job, Job.Invalid> {
            let text = #"{"jobId":"j","kind":"assertion","teamId":"A1B2C3D4E5","bundleId":"com.example.app","keyId":"a2V5","assertion":"AA==","clientDataHash":"AA==","receivedAt":"2026-05-01T12:00:00Z"\#(extra)}"#
            return Job.parse(JSONValue.parse(Array(text.utf8))!)
        }
        #expect(try parse("").get().limitedUse == false)
        #expect(try parse(#","limitedUse":true"#).get().limitedUse == true)
        #expect(try parse(#","limitedUse":false"#).get().limitedUse == false)
        for bad in [#","limitedUse":"true""#, #","limitedUse":1"#] {
            guard case .failure(let invalid) = parse(bad) else {
                Issue.record("accepted \(bad)")
                continue
            }
            #expect(invalid.failure.reason == .invalidField && invalid.jobId == "j")
        }
    }

    // MARK: What consumption decides before the ledger

    static func admit(
        _ token: String, consumer: TokenConsumption.Consumer = .app(app), issuer: String = TokenSigner.defaultIssuer,
        keys: [String] = [TokenKeys.current], at seconds: Int64 = TokenTests.issuedAt.seconds + 10
    ) throws -> Result<TokenConsumption.Spendable, TokenConsumption.Refusal> {
        let verifier = TokenTests.verifier(try TokenSigner(keys: keys.map { try ECPrivateKey(pem: $0) }).jwks, at: seconds)
        do {
            return .success(try TokenConsumption.admit(token, verifier: verifier, issuer: issuer, consumer: consumer))
        } catch {
            return .failure(error)
        }
    }

    @Test func aValidLimitedTokenOfTheConsumersAppMayBeSpent() throws {
        let token = try Self.token(limitedUse: true)
        let spendable = try Self.admit(token).get()
        #expect(spendable.app == Self.app)
        #expect(spendable.expiresAt == TokenTests.issuedAt.seconds + 600)
        #expect(spendable.jti == (try Self.claims(token))["jti"]?.stringValue)
        #expect(try Self.admit(token, consumer: .anyApp).get() == spendable)
        // Within the leeway past exp (60 s here) it still may; then it is expired.
        #expect(throws: Never.self) { try Self.admit(token, at: TokenTests.issuedAt.seconds + 600 + 59).get() }
    }

    @Test func refusalsSayWhy() throws {
        let token = try Self.token(limitedUse: true)
        let other = AppIdentity(teamId: "Z9Y8X7W6V5", bundleId: "com.example.other")
        #expect(try Self.admit(token, consumer: .app(other)) == .failure(.otherApp(Self.app)))
        #expect(try Self.admit(try Self.token(limitedUse: false)) == .failure(.notLimitedUse))
        #expect(try Self.admit(token, at: TokenTests.issuedAt.seconds + 600 + 60) == .failure(.invalid(.expired)))
        #expect(try Self.admit(token, issuer: "someone-else") == .failure(.invalid(.issuerMismatch)))
        // The key it was signed with is no longer published: refused, whatever the rest says.
        #expect(try Self.admit(token, keys: [TokenKeys.retired]) == .failure(.invalid(.unknownKid)))
        #expect(try Self.admit(TokenTests.flippingSignatureByte(token, at: 5)) == .failure(.invalid(.signatureInvalid)))
        #expect(try Self.admit("not.a.token") == .failure(.invalid(.malformed)))
        // An invalid token of another app is invalid first: a key learns nothing more of it.
        #expect(try Self.admit(token, consumer: .app(other), at: TokenTests.issuedAt.seconds + 10_000) == .failure(.invalid(.expired)))
    }
}
