import AttestCore
import AttestCrypto
import Testing
@testable import AppleReceipts

@Suite("DeviceCheck JWTs: ES256, kid, iss, iat; cached per team, renewed after 20 minutes")
struct DeviceCheckTokenTests {
    let key = DeviceCheckKey(teamId: "TEAM123456", keyId: "KEY1234567", privateKey: try! ECPrivateKey(pem: DeviceCheckKeys.team))

    func decode(_ token: String) throws -> (header: JSONValue, claims: JSONValue, signingInput: String, signature: [UInt8]) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let header = try #require(Base64.decodeURL(parts[0]).flatMap { JSONValue.parse($0) })
        let claims = try #require(Base64.decodeURL(parts[1]).flatMap { JSONValue.parse($0) })
        return (header, claims, parts[0] + "." + parts[1], try #require(Base64.decodeURL(parts[2])))
    }

    @Test("The token: header alg ES256 and kid, claims iss and iat exactly, signed by the team's key")
    func shape() throws {
        let tokens = DeviceCheckTokens(keys: [key.teamId: key], clock: FixedClock(Timestamp(seconds: 1_780_000_000)))
        let token = try #require(tokens.token(teamId: "TEAM123456"))
        let (header, claims, signingInput, signature) = try decode(token)
        #expect(header == .object([("alg", .string("ES256")), ("kid", .string("KEY1234567"))]))
        #expect(claims == .object([("iss", .string("TEAM123456")), ("iat", .int(1_780_000_000))]))
        let der = try #require(ECDSASignatureEncoding.der(fromRaw: signature))
        #expect(key.privateKey.publicKey.verify(signature: der, message: Array(signingInput.utf8), digest: .sha256))
        #expect(!token.contains("="))
    }

    @Test("Reused for 20 minutes, then renewed with the new iat; renewed at once when the clock goes back")
    func renewal() throws {
        let clock = SteppedClock(Timestamp(seconds: 1_780_000_000))
        let tokens = DeviceCheckTokens(keys: [key.teamId: key], clock: clock)
        let first = try #require(tokens.token(teamId: "TEAM123456"))
        clock.advance(seconds: DeviceCheckTokens.renewAfterSeconds - 1)
        #expect(tokens.token(teamId: "TEAM123456") == first)
        clock.advance(seconds: 1)
        let second = try #require(tokens.token(teamId: "TEAM123456"))
        #expect(second != first)
        #expect(try decode(second).claims["iat"] == .int(1_780_000_000 + DeviceCheckTokens.renewAfterSeconds))
        clock.advance(seconds: -60)
        let third = try #require(tokens.token(teamId: "TEAM123456"))
        #expect(third != second)
        #expect(try decode(third).claims["iat"] == .int(1_780_000_000 + DeviceCheckTokens.renewAfterSeconds - 60))
    }

    @Test("One token per team; none for a team without a key")
    func perTeam() throws {
        let other = DeviceCheckKey(teamId: "OTHER12345", keyId: "KEY7654321", privateKey: try ECPrivateKey(pem: DeviceCheckKeys.team))
        let tokens = DeviceCheckTokens(keys: [key.teamId: key, other.teamId: other], clock: FixedClock(Timestamp(seconds: 1_780_000_000)))
        #expect(try decode(#require(tokens.token(teamId: "OTHER12345"))).claims["iss"] == .string("OTHER12345"))
        #expect(try decode(#require(tokens.token(teamId: "OTHER12345"))).header["kid"] == .string("KEY7654321"))
        #expect(tokens.token(teamId: "NOKEY12345") == nil)
        #expect(!tokens.isConfigured(teamId: "NOKEY12345"))
        #expect(tokens.isConfigured(teamId: "TEAM123456"))
    }
}
