import AttestCore
import AttestCrypto
import AttestJobs
import AttestTokens
import AttestVerifier
import Testing

@Suite struct TokenTests {
    static let issuedAt = Timestamp(seconds: 1_777_636_800)  // 2026-05-01T12:00:00Z

    static func accepted() -> Verdict {
        var verdict = Verdict(job: nil, verifiedAt: Timestamp(microseconds: issuedAt.microseconds + 250_000))
        verdict.jobId = "job-1"
        verdict.kind = .attestation
        verdict.keyId = "HXuyCE8REKn8prt0WZeySyrtcaQ0AY20K4tx+IbYtS8="
        verdict.teamId = "A1B2C3D4E5"
        verdict.bundleId = "com.example.app"
        verdict.environment = .production
        return verdict
    }

    static func signer(_ pems: String..., issuer: String = TokenSigner.defaultIssuer) throws -> TokenSigner {
        try TokenSigner(keys: pems.map { pem throws in try ECPrivateKey(pem: pem) }, issuer: issuer)
    }

    static func verifier(_ jwks: JWKS, at seconds: Int64 = issuedAt.seconds + 10) -> TokenVerifier {
        TokenVerifier(jwks: jwks, clock: FixedClock(Timestamp(seconds: seconds)))
    }

    static func rejection(_ body: () throws(TokenRejection) -> JSONValue) -> TokenRejection? {
        do {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }

    /// `token` with its signature's byte `index` XORed with `mask`.
    static func flippingSignatureByte(_ token: String, at index: Int, mask: UInt8 = 0x01) -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        var signature = Base64.decodeURL(parts[2])!
        signature[index] ^= mask
        return parts[0] + "." + parts[1] + "." + Base64.encodeURL(signature)
    }

    @Test func loadsPKCS8AndSEC1AndRefusesOtherKeys() throws {
        #expect(try ECPrivateKey(pem: TokenKeys.current).publicPoint.count == 65)
        #expect(try ECPrivateKey(pem: TokenKeys.sec1).publicPoint.first == 0x04)
        #expect(throws: ECPrivateKey.LoadError.notP256) { try ECPrivateKey(pem: TokenKeys.p384) }
        #expect(throws: ECPrivateKey.LoadError.notPrivateKeyPEM) { try ECPrivateKey(pem: "not a key") }
        let encrypted = PEM.encode([0x30, 0x00], label: "ENCRYPTED PRIVATE KEY")
        #expect(throws: ECPrivateKey.LoadError.encrypted) { try ECPrivateKey(pem: encrypted) }
        let garbage = PEM.encode([0x30, 0x03, 0x02, 0x01, 0x00], label: "PRIVATE KEY")
        #expect(throws: ECPrivateKey.LoadError.unreadable) { try ECPrivateKey(pem: garbage) }
    }

    @Test func signaturesConvertBetweenJOSEAndDER() throws {
        let key = try ECPrivateKey(pem: TokenKeys.current)
        let raw = try #require(key.signES256(Array("message".utf8)))
        #expect(raw.count == 64)
        let der = try #require(ECDSASignatureEncoding.der(fromRaw: raw))
        #expect(ECDSASignatureEncoding.raw(fromDER: der, coordinateSize: 32) == raw)
        #expect(key.publicKey.verify(signature: der, message: Array("message".utf8), digest: .sha256))
        #expect(ECDSASignatureEncoding.der(fromRaw: []) == nil)
        #expect(ECDSASignatureEncoding.raw(fromDER: der + [0], coordinateSize: 32) == nil)
    }

    @Test func acceptedVerdictCarriesAVerifiableToken() throws {
        let signer = try Self.signer(TokenKeys.current)
        var verdict = Self.accepted()
        try verdict.attachToken(
            signer: signer, lifetimeSeconds: 600, deviceId: "device-7", riskCategory: "trusted",
            customClaims: [("tier", .string("gold"))])
        let token = try #require(verdict.token)
        #expect(verdict.expiresAt == Self.issuedAt.adding(seconds: 600))
        #expect(verdict.json["token"]?.stringValue == token)
        #expect(verdict.json["expiresAt"]?.stringValue == "2026-05-01T12:10:00Z")

        let claims = try Self.verifier(signer.jwks).verify(token, audience: "A1B2C3D4E5.com.example.app")
        #expect(claims["iss"] == .string("attest-worker"))
        #expect(claims["sub"] == .string("HXuyCE8REKn8prt0WZeySyrtcaQ0AY20K4tx+IbYtS8="))
        #expect(claims["aud"] == .string("A1B2C3D4E5.com.example.app"))
        #expect(claims["iat"] == .int(Self.issuedAt.seconds))
        #expect(claims["exp"] == .int(Self.issuedAt.seconds + 600))
        #expect(claims["jti"] == .string("job-1"))
        #expect(claims["kind"] == .string("attestation"))
        #expect(claims["deviceId"] == .string("device-7"))
        #expect(claims["environment"] == .string("production"))
        #expect(claims["riskCategory"] == .string("trusted"))
        #expect(claims["tier"] == .string("gold"))

        let header = JSONValue.parse(Base64.decodeURL(token.split(separator: ".")[0])!)
        #expect(header?["alg"] == .string("ES256"))
        #expect(header?["kid"] == .string(signer.signingKeyID))
    }

    @Test func rejectedVerdictGetsNoToken() throws {
        var verdict = Self.accepted()
        verdict.failure = VerificationFailure(.assertionInvalid, .counterNotIncreasing, "counter")
        try verdict.attachToken(signer: Self.signer(TokenKeys.current))
        #expect(verdict.token == nil && verdict.expiresAt == nil)
        #expect(verdict.json["token"] == nil)
    }

    @Test func customClaimsNeverOverrideRegisteredOnes() throws {
        let signer = try Self.signer(TokenKeys.current)
        var verdict = Self.accepted()
        try verdict.attachToken(
            signer: signer,
            customClaims: [
                ("sub", .string("attacker")), ("aud", .string("other.app")), ("exp", .int(Int64.max)),
                ("iss", .string("me")), ("riskCategory", .string("trusted")), ("plan", .int(3)), ("plan", .int(4)),
            ])
        let claims = try Self.verifier(signer.jwks).verify(try #require(verdict.token))
        #expect(claims["sub"] == .string("HXuyCE8REKn8prt0WZeySyrtcaQ0AY20K4tx+IbYtS8="))
        #expect(claims["aud"] == .string("A1B2C3D4E5.com.example.app"))
        #expect(claims["exp"] == .int(Self.issuedAt.seconds + TokenSigner.defaultLifetimeSeconds))
        #expect(claims["iss"] == .string("attest-worker"))
        #expect(claims["riskCategory"] == nil)
        #expect(claims["plan"] == .int(3))
    }

    @Test func changedSignatureByteIsRejected() throws {
        let signer = try Self.signer(TokenKeys.current)
        var verdict = Self.accepted()
        try verdict.attachToken(signer: signer)
        let token = try #require(verdict.token)
        for index in [0, 31, 32, 63] {
            let changed = Self.flippingSignatureByte(token, at: index)
            #expect(Self.rejection { () throws(TokenRejection) in try Self.verifier(signer.jwks).verify(changed) } == .signatureInvalid)
        }
    }

    @Test func audienceExpiryAndNotBeforeAreChecked() throws {
        let signer = try Self.signer(TokenKeys.current)
        var verdict = Self.accepted()
        try verdict.attachToken(signer: signer, lifetimeSeconds: 300)
        let token = try #require(verdict.token)
        let exp = Self.issuedAt.seconds + 300
        #expect(Self.rejection { () throws(TokenRejection) in
            try Self.verifier(signer.jwks).verify(token, audience: "A1B2C3D4E5.com.example.other")
        } == .audienceMismatch)
        #expect(Self.rejection { () throws(TokenRejection) in try Self.verifier(signer.jwks, at: exp + 60).verify(token) } == .expired)
        #expect(Self.rejection { () throws(TokenRejection) in try Self.verifier(signer.jwks, at: exp + 59).verify(token) } == nil)
        #expect(Self.rejection { () throws(TokenRejection) in
            try Self.verifier(signer.jwks, at: exp + 86_400).verify(token, checkExpiry: false)
        } == nil)

        let early = try signer.sign(claims: .object([("exp", .int(exp)), ("nbf", .int(Self.issuedAt.seconds + 120))]))
        #expect(Self.rejection { () throws(TokenRejection) in try Self.verifier(signer.jwks).verify(early) } == .notYetValid)
        let noExpiry = try signer.sign(claims: .object([("sub", .string("x"))]))
        #expect(Self.rejection { () throws(TokenRejection) in try Self.verifier(signer.jwks).verify(noExpiry) } == .malformed)
    }

    @Test func onlyES256IsAllowed() throws {
        let signer = try Self.signer(TokenKeys.current)
        var verdict = Self.accepted()
        try verdict.attachToken(signer: signer)
        let parts = try #require(verdict.token).split(separator: ".")
        for alg in ["none", "HS256", "ES384", "RS256"] {
            let header = JSONValue.object([("alg", .string(alg)), ("kid", .string(signer.signingKeyID))])
            let forged = Base64.encodeURL(Array(header.serialized().utf8)) + "." + parts[1] + "." + (alg == "none" ? "" : parts[2])
            #expect(Self.rejection { () throws(TokenRejection) in try Self.verifier(signer.jwks).verify(forged) } == .algNotAllowed, "\(alg)")
        }
    }

    @Test func unknownKidIsRejected() throws {
        let signer = try Self.signer(TokenKeys.current)
        var verdict = Self.accepted()
        try verdict.attachToken(signer: signer)
        let other = try Self.signer(TokenKeys.retired)
        #expect(Self.rejection { () throws(TokenRejection) in try Self.verifier(other.jwks).verify(verdict.token!) } == .unknownKid)
    }

    /// Rotation: after the new key moves first, tokens from the retired key still verify against the set
    /// the worker publishes, and new tokens are signed under the new key.
    @Test func retiredKeyStaysInTheSetAndStillVerifies() throws {
        let before = try Self.signer(TokenKeys.retired)
        var old = Self.accepted()
        try old.attachToken(signer: before)
        let after = try Self.signer(TokenKeys.current, TokenKeys.retired)
        #expect(after.jwks.keys.map(\.kid) == [after.signingKeyID, before.signingKeyID])
        #expect(throws: Never.self) { try Self.verifier(after.jwks).verify(old.token!) }
        var new = Self.accepted()
        try new.attachToken(signer: after)
        let header = JSONValue.parse(Base64.decodeURL(new.token!.split(separator: ".")[0])!)
        #expect(header?["kid"] == .string(after.signingKeyID) && after.signingKeyID != before.signingKeyID)
        #expect(throws: TokenSigner.LoadError.self) { try Self.signer(TokenKeys.current, TokenKeys.current) }
        #expect(throws: TokenSigner.LoadError.self) { try TokenSigner(keys: []) }
    }

    @Test func jwksRoundTripsAndIsReadStrictly() throws {
        let signer = try Self.signer(TokenKeys.current, TokenKeys.sec1)
        let text = signer.jwks.json.serialized()
        let parsed = try #require(JWKS(json: Array(text.utf8)))
        #expect(parsed.keys.map(\.kid) == signer.jwks.keys.map(\.kid))
        // kid is the RFC 7638 thumbprint, which is 43 base64url characters of SHA-256.
        #expect(parsed.keys.allSatisfy { $0.kid.utf8.count == 43 && Base64.decodeURL($0.kid)?.count == 32 })

        let rsa = #"{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}"#
        #expect(JWKS(json: Array(rsa.utf8))?.keys.isEmpty == true)
        guard case .array(let members)? = signer.jwks.json["keys"] else { Issue.record("no keys"); return }
        let duplicated = JSONValue.object([("keys", .array([members[0], members[0]]))]).serialized()
        #expect(JWKS(json: Array(duplicated.utf8)) == nil)
        let zero = Base64.encodeURL([UInt8](repeating: 0, count: 32))
        let offCurve = #"{"keys":[{"kty":"EC","crv":"P-256","x":"\#(zero)","y":"\#(zero)"}]}"#
        #expect(JWKS(json: Array(offCurve.utf8)) == nil)
        for junk in ["", "{}", "[]", #"{"keys":{}}"#, #"{"keys":[1]}"#,
                     #"{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}"#] {
            #expect(JWKS(json: Array(junk.utf8)) == nil, "\(junk)")
        }
    }

    /// Hostile tokens: truncations, byte changes and junk must be refused with a reason, never crash.
    @Test func malformedTokensNeverCrash() throws {
        let signer = try Self.signer(TokenKeys.current)
        var verdict = Self.accepted()
        try verdict.attachToken(signer: signer)
        let token = Array(try #require(verdict.token).utf8)
        let verifier = Self.verifier(signer.jwks)
        var inputs = ["", ".", "..", "...", "a.b.c", "e30.e30.", String(repeating: "A", count: 20_000),
                      "eyJhbGciOiJFUzI1NiJ9.e30.AAAA", "\u{0}.\u{0}.\u{0}"]
        for length in stride(from: 0, to: token.count, by: 7) {
            inputs.append(String(decoding: token.prefix(length), as: UTF8.self))
        }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2_000 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            var mutated = token
            let index = Int(state >> 33) % mutated.count
            mutated[index] = UInt8(truncatingIfNeeded: state >> 17)
            inputs.append(String(decoding: mutated, as: UTF8.self))
        }
        for input in inputs where input != String(decoding: token, as: UTF8.self) {
            let reason = Self.rejection { () throws(TokenRejection) in try verifier.verify(input) }
            #expect(reason != nil, "\(input.prefix(80)) was accepted")
        }
        for claims in [#"{"exp":1e400}"#, #"{"exp":-9223372036854775808}"#, #"{"exp":"soon"}"#, #"[]"#, #"{"exp":1,"exp":2}"#] {
            let header = Base64.encodeURL(Array(#"{"alg":"ES256","kid":"\#(signer.signingKeyID)"}"#.utf8))
            let input = header + "." + Base64.encodeURL(Array(claims.utf8))
            let signature = try #require(try ECPrivateKey(pem: TokenKeys.current).signES256(Array(input.utf8)))
            let reason = Self.rejection { () throws(TokenRejection) in try verifier.verify(input + "." + Base64.encodeURL(signature)) }
            #expect(reason == .malformed, "\(claims)")
        }
    }
}
