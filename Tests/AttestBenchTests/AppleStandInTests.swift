import AttestCore
import AttestCrypto
import Testing

@testable import attest_bench

/// The stand-in's own rules: its JWT check (what Apple refuses with 401) and its script.
@Suite struct AppleStandInTests {
    /// Fixed P-256 keys (`openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt`).
    static let teamKey = try! ECPrivateKey(pem: """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgod7Fb3cVnG54rwbN
        BZxUi9eLNDTg9x/GC8gimfWGvDWhRANCAARGsPcormhMrLmahOX0wrkAFjSHIeEp
        FPFeGgSz9I2kPugjKS1c2yZQwE3SsShuJWRwbqSUZHMr+qYIVSGZINt8
        -----END PRIVATE KEY-----
        """)
    static let otherKey = try! ECPrivateKey(pem: """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1/UcIbSJ0d2/jNpd
        JylkTLJjHITn7+wmuSqb1E1otp2hRANCAAR058tKfB9JFriu2lkSw1cfrZ3wreS6
        30yC1liXSUFFxN4g9M9x8D0wLfTi9Kp1P2t2RCE4drFTT5fNUulDGMTx
        -----END PRIVATE KEY-----
        """)
    static let now = Timestamp(seconds: 1_780_000_000)
    let checker = AppleStandInToken(
        keys: ["KEY1234567": .init(teamId: "TEAM123456", keyId: "KEY1234567", publicKey: teamKey.publicKey)], maxAgeSeconds: 3600)

    static func token(
        header: JSONValue = .object([("alg", .string("ES256")), ("kid", .string("KEY1234567"))]),
        claims: JSONValue = .object([("iss", .string("TEAM123456")), ("iat", .int(now.seconds))]), key: ECPrivateKey = teamKey
    ) -> String {
        let input = Base64.encodeURL(Array(header.serialized().utf8)) + "." + Base64.encodeURL(Array(claims.serialized().utf8))
        return input + "." + Base64.encodeURL(key.signES256(Array(input.utf8))!)
    }

    func refused(_ token: String?) -> Bool {
        if case .failure = checker.check(token, now: Self.now) { return true }
        return false
    }

    @Test func acceptsTheTeamsToken() throws {
        #expect(try checker.check(Self.token(), now: Self.now).get() == "TEAM123456")
        // iat up to the maximum age back, and up to a minute ahead.
        #expect(!refused(Self.token(claims: .object([("iss", .string("TEAM123456")), ("iat", .int(Self.now.seconds - 3600))]))))
        #expect(!refused(Self.token(claims: .object([("iss", .string("TEAM123456")), ("iat", .int(Self.now.seconds + 60))]))))
    }

    @Test func refusesEveryBrokenToken() {
        #expect(refused(nil))
        #expect(refused("a.b"))
        #expect(refused(Self.token(header: .object([("alg", .string("none")), ("kid", .string("KEY1234567"))]))))
        #expect(refused(Self.token(header: .object([("alg", .string("HS256")), ("kid", .string("KEY1234567"))]))))
        #expect(refused(Self.token(header: .object([("alg", .string("ES256")), ("kid", .string("OTHERKEY00"))]))))
        #expect(refused(Self.token(header: .object([("alg", .string("ES256"))]))))
        #expect(refused(Self.token(claims: .object([("iss", .string("OTHER12345")), ("iat", .int(Self.now.seconds))]))))
        #expect(refused(Self.token(claims: .object([("iss", .string("TEAM123456"))]))))
        #expect(refused(Self.token(claims: .object([("iss", .string("TEAM123456")), ("iat", .int(Self.now.seconds - 3601))]))))
        #expect(refused(Self.token(claims: .object([("iss", .string("TEAM123456")), ("iat", .int(Self.now.seconds + 61))]))))
        #expect(refused(Self.token(key: Self.otherKey)))
        let parts = Self.token().split(separator: ".")
        #expect(refused(parts[0] + "." + parts[1] + "." + Base64.encodeURL(Array(repeating: 1, count: 64))))
    }

    @Test func scriptSteps() throws {
        let script = try AppleStandInScript(json: Array("""
            {"devices": {"K1": [{"riskMetric": 1}, {"status": 429, "retryAfter": "7"}, {"forged": true, "delaySeconds": 2}]},
             "default": [{"status": 404}]}
            """.utf8))
        #expect(script.step(keyId: "K1", index: 0) == .init(riskMetric: 1))
        #expect(script.step(keyId: "K1", index: 1) == .init(status: 429, retryAfter: "7"))
        #expect(script.step(keyId: "K1", index: 2) == .init(delaySeconds: 2, forged: true))
        #expect(script.step(keyId: "K1", index: 9) == .init(delaySeconds: 2, forged: true))
        #expect(script.step(keyId: "other", index: 0) == .init(status: 404))
        #expect(AppleStandInScript().step(keyId: "any", index: 3) == .init(riskMetric: 1))
        for bad in ["[]", "{\"x\": 1}", "{\"default\": []}", "{\"default\": [{\"status\": 700}]}", "{\"default\": [{\"delaySeconds\": 26}]}",
            "{\"default\": [{\"unknown\": 1}]}", "{\"devices\": {\"K\": [1]}}"] {
            #expect(throws: AppleStandInScript.Invalid.self) { try AppleStandInScript(json: Array(bad.utf8)) }
        }
    }
}
