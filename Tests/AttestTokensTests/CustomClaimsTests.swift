import AttestCore
import AttestJobs
import AttestTokens
import Testing

/// `app set --claims`: what an app's custom claims may be, and that a token carries them after its own.
@Suite struct CustomClaimsTests {
    static func refusal(_ text: String) -> String? {
        do {
            _ = try CustomClaims(text: text)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func acceptsABoundedObjectInItsOrder() throws {
        let claims = try CustomClaims(text: #"{"tier":"gold","plan":3,"flags":{"beta":true,"list":[1,[2]]}}"#)
        #expect(claims.members.map(\.0) == ["tier", "plan", "flags"])
        #expect(try CustomClaims(text: "{}").members.isEmpty)
        #expect(CustomClaims().json.serialized() == "{}")
    }

    @Test(arguments: [#"[]"#, #""gold""#, "3", "null", "true", #"[{"a":1}]"#])
    func refusesWhatIsNotAnObject(_ text: String) {
        #expect(Self.refusal(text) == "claims must be a JSON object")
    }

    @Test(arguments: ["", "{", #"{"a":1,"a":2}"#, #"{"a":1,}"#, "{'a':1}", #"{"a":1} x"#])
    func refusesWhatIsNotStrictJSON(_ text: String) {
        #expect(Self.refusal(text)?.hasPrefix("claims must be strict JSON") == true)
    }

    @Test(arguments: ["iss", "sub", "aud", "exp", "nbf", "iat", "jti", "kind", "deviceId", "subjectId", "environment", "riskCategory"])
    func refusesNamesTheTokenSets(_ name: String) {
        #expect(Self.refusal(#"{"tier":"gold","\#(name)":"x"}"#) == "claim \(name) is set by the worker and cannot be a custom claim")
    }

    @Test func refusesAnEmptyName() {
        #expect(Self.refusal(#"{"":1}"#) == "a claim name must not be empty")
    }

    @Test(arguments: [#"{"a\u0000b":1}"#, #"{"a\nb":1}"#, #"{"\u0007":1}"#])
    func refusesControlCharactersInNames(_ text: String) {
        #expect(Self.refusal(text) == "a claim name must not hold control characters (NUL among them)")
    }

    /// Numbers a relying party would read as something else: infinite, or whole beyond 2^53.
    @Test(arguments: ["1e400", "-1e400", "12345678901234567890", "9007199254740993", "-9007199254740993", "[1, {\"x\": 1e300000}]"])
    func refusesNumbersAReaderWouldNotKeep(_ number: String) {
        #expect(Self.refusal(#"{"n":\#(number)}"#)?.hasPrefix("claim n holds a number") == true, "\(number)")
    }

    @Test func keepsNumbersEveryReaderKeeps() throws {
        let claims = try CustomClaims(text: #"{"a":9007199254740992,"b":-9007199254740992,"c":1.5e-300,"d":0.1,"e":-0}"#)
        #expect(claims.members.count == 5)
    }

    @Test func boundsTheMembers() throws {
        func object(_ n: Int) -> String { "{" + (0..<n).map { "\"c\($0)\":\($0)" }.joined(separator: ",") + "}" }
        #expect(try CustomClaims(text: object(CustomClaims.maxMembers)).members.count == CustomClaims.maxMembers)
        #expect(Self.refusal(object(CustomClaims.maxMembers + 1)) == "claims may have at most 32 members, not 33")
    }

    /// The bound is on the serialized object (what the token carries), not the text typed: whitespace is free.
    @Test func boundsTheSerializedSize() throws {
        // {"a":"…"} is 8 bytes around the value.
        func object(_ valueBytes: Int, padding: Int = 0) -> String {
            "{" + String(repeating: " ", count: padding) + "\"a\":\"" + String(repeating: "x", count: valueBytes) + "\"}"
        }
        #expect(try CustomClaims(text: object(CustomClaims.maxSerializedBytes - 8)).json.serialized().utf8.count == 4096)
        #expect(try CustomClaims(text: object(CustomClaims.maxSerializedBytes - 8, padding: 100)).members.count == 1)
        #expect(Self.refusal(object(CustomClaims.maxSerializedBytes - 7)) == "claims are 4097 bytes serialized; at most 4096 are allowed")
        #expect(Self.refusal(object(4 * CustomClaims.maxSerializedBytes)) == "claims are 16392 bytes; at most 4096 are allowed")
        // 4208 bytes typed as escapes, 1408 serialized (é is two bytes of UTF-8).
        #expect(try CustomClaims(text: "{\"a\":\"" + String(repeating: #"\u00e9"#, count: 700) + "\"}").members.count == 1)
    }

    @Test func boundsTheDepth() throws {
        func nested(_ levels: Int) -> String {
            String(repeating: #"{"a":"#, count: levels) + "1" + String(repeating: "}", count: levels)
        }
        #expect(try CustomClaims(text: nested(CustomClaims.maxDepth)).members.count == 1)
        #expect(try CustomClaims(text: #"{"a":[[[1]]]}"#).members.count == 1)
        #expect(Self.refusal(nested(CustomClaims.maxDepth + 1)) == "claim a nests deeper than 4 levels")
        #expect(Self.refusal(#"{"a":[[[[1]]]]}"#) == "claim a nests deeper than 4 levels")
        #expect(Self.refusal(nested(40))?.hasPrefix("claims must be strict JSON") == true)
        #expect(throws: CustomClaims.Invalid.self) { try CustomClaims(json: .object([("a", .array([.array([.array([.array([])])])]))])) }
    }

    @Test func tokenCarriesTheClaimsAndTheSubjectAfterItsOwn() throws {
        let signer = try TokenTests.signer(TokenKeys.current)
        var verdict = TokenTests.accepted()
        verdict.subjectId = "user-42"
        let claims = try CustomClaims(text: #"{"tier":"gold","limits":{"daily":5}}"#)
        try verdict.attachToken(signer: signer, deviceId: "device-7", riskCategory: "trusted", customClaims: claims.members)
        let token = try #require(verdict.token)
        let verified = try TokenTests.verifier(signer.jwks).verify(token)
        #expect(verified["subjectId"] == .string("user-42"))
        #expect(verified["tier"] == .string("gold"))
        #expect(verified["limits"] == .object([("daily", .int(5))]))
        let payload = try #require(JSONValue.parse(Base64.decodeURL(token.split(separator: ".")[1])!))
        guard case .object(let members) = payload else { Issue.record("payload is not an object"); return }
        #expect(members.map(\.0).suffix(2) == ["tier", "limits"])
        #expect(members.map(\.0).firstIndex(of: "subjectId")! < members.map(\.0).firstIndex(of: "tier")!)
    }

    @Test func tokenWithoutASubjectHasNoSubjectClaim() throws {
        let signer = try TokenTests.signer(TokenKeys.current)
        var verdict = TokenTests.accepted()
        try verdict.attachToken(signer: signer)
        #expect(try TokenTests.verifier(signer.jwks).verify(try #require(verdict.token))["subjectId"] == nil)
    }
}
