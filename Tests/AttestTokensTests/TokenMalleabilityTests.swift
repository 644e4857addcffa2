import AttestCore
import AttestCrypto
import AttestJobs
import AttestTokens
import AttestVerifier
import Testing

/// A token has one valid string: signatures are issued low-S and a high-S twin is refused; `iss` is
/// checked when the relying party names its issuer.
@Suite struct TokenMalleabilityTests {
    static let order = Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!
    static let halfOrder = Hex.decode("7fffffff800000007fffffffffffffffde737d56d38bcf4279dce5617e3192a8")!

    /// n − s, big-endian, in the test's own arithmetic (independent of the code under test).
    static func negated(_ s: ArraySlice<UInt8>) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for i in (0..<32).reversed() {
            let d = Int(order[i]) - Int(s[s.startIndex + i]) - borrow
            out[i] = UInt8((d + 256) % 256)
            borrow = d < 0 ? 1 : 0
        }
        return out
    }

    static func isLow(_ s: ArraySlice<UInt8>) -> Bool { !halfOrder.lexicographicallyPrecedes(s) }

    @Test func everyIssuedSignatureIsLowSAndStillVerifies() throws {
        let key = try ECPrivateKey(pem: TokenKeys.current)
        var highTwinsVerify = 0
        for n in 0..<400 {
            let message = Array("message \(n)".utf8)
            let raw = try #require(key.signES256(message))
            #expect(raw.count == 64)
            #expect(Self.isLow(raw[32...]), "signature \(n) is high-S")
            #expect(key.publicKey.verify(signature: ECDSASignatureEncoding.der(fromRaw: raw)!, message: message, digest: .sha256))
            // The twin OpenSSL would have returned half the time verifies too: that is the malleability.
            let twin = Array(raw[..<32]) + Self.negated(raw[32...])
            if key.publicKey.verify(signature: ECDSASignatureEncoding.der(fromRaw: twin)!, message: message, digest: .sha256) {
                highTwinsVerify += 1
            }
        }
        #expect(highTwinsVerify == 400)
    }

    @Test func lowSNormalisesAtTheHalfOrderEdge() {
        let r = [UInt8](repeating: 1, count: 32)
        var justAbove = Self.halfOrder
        justAbove[31] += 1
        #expect(ECDSASignatureEncoding.isLowS(p256Raw: r + Self.halfOrder))
        #expect(!ECDSASignatureEncoding.isLowS(p256Raw: r + justAbove))
        #expect(ECDSASignatureEncoding.lowS(p256Raw: r + justAbove) == r + Self.negated(justAbove[...]))
        #expect(ECDSASignatureEncoding.lowS(p256Raw: r + Self.halfOrder) == r + Self.halfOrder)
        let top = [UInt8](repeating: 0xff, count: 32)
        #expect(!ECDSASignatureEncoding.isLowS(p256Raw: r + top))
        #expect(!ECDSASignatureEncoding.isLowS(p256Raw: r))  // not 64 bytes
    }

    @Test func negatingSGivesTheTwinAndUndoesItself() {
        let r = [UInt8](repeating: 7, count: 32)
        var one = [UInt8](repeating: 0, count: 32)
        one[31] = 1
        var orderMinusOne = Self.order
        orderMinusOne[31] -= 1
        for s in [one, orderMinusOne, Self.halfOrder, [UInt8](repeating: 0x5a, count: 32)] {
            let twin = ECDSASignatureEncoding.negatingS(p256Raw: r + s)
            #expect(twin == r + Self.negated(s[...]))
            #expect(ECDSASignatureEncoding.negatingS(p256Raw: twin) == r + s)
            #expect(ECDSASignatureEncoding.isLowS(p256Raw: twin) != ECDSASignatureEncoding.isLowS(p256Raw: r + s))
        }
    }

    /// raw(fromDER:) takes DER only: no BER length, no padded or negative integers, nothing after, nothing wider
    /// than the coordinates.
    @Test func rawFromDERIsStrict() {
        let r = [UInt8](repeating: 0x11, count: 32)
        let s = [UInt8](repeating: 0x22, count: 32)
        let der = ECDSASignatureEncoding.der(fromRaw: r + s)!
        #expect(der == [0x30, 68, 0x02, 32] + r + [0x02, 32] + s)
        #expect(ECDSASignatureEncoding.raw(fromDER: der, coordinateSize: 32) == r + s)
        let notDER: [[UInt8]] = [
            [0x30, 0x81, 68, 0x02, 32] + r + [0x02, 32] + s,  // long-form length
            [0x30, 69, 0x02, 33, 0x00] + r + [0x02, 32] + s,  // a padded, non-minimal integer
            [0x30, 68, 0x02, 32] + [0x91] + r.dropFirst() + [0x02, 32] + s,  // a negative r
            [0x30, 68, 0x02, 32] + r + [0x02, 31] + s.dropFirst(),  // lengths that do not add up
            [0x30, 68, 0x02, 0x81, 32] + r + [0x02, 31] + s.dropFirst(),  // a long-form integer length
            [0x31, 68, 0x02, 32] + r + [0x02, 32] + s,  // a SET, not a SEQUENCE
            der + [0x00], Array(der.dropLast()), [],
        ]
        for bytes in notDER {
            #expect(ECDSASignatureEncoding.raw(fromDER: bytes, coordinateSize: 32) == nil, "\(bytes.prefix(6))")
        }
        let wide = ECDSASignatureEncoding.der(fromRaw: [0x01] + r + [0x00] + s)!  // a 33-byte r
        #expect(ECDSASignatureEncoding.raw(fromDER: wide, coordinateSize: 32) == nil)
    }

    @Test func aHighSTokenIsRefusedAndTheLowOneAccepted() throws {
        let signer = try TokenTests.signer(TokenKeys.current)
        let verifier = TokenTests.verifier(signer.jwks)
        for n in 0..<50 {
            let token = try signer.sign(claims: .object([("exp", .int(TokenTests.issuedAt.seconds + 600)), ("jti", .string("t-\(n)"))]))
            #expect(TokenTests.rejection { () throws(TokenRejection) in try verifier.verify(token) } == nil)
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            let signature = Base64.decodeURL(parts[2])!
            let twin = parts[0] + "." + parts[1] + "." + Base64.encodeURL(Array(signature[..<32]) + Self.negated(signature[32...]))
            #expect(TokenTests.rejection { () throws(TokenRejection) in try verifier.verify(twin) } == .signatureInvalid)
        }
    }

    @Test func theIssuerIsCheckedWhenAsked() throws {
        let signer = try TokenTests.signer(TokenKeys.current, issuer: "attest-eu")
        let verifier = TokenTests.verifier(signer.jwks)
        var verdict = TokenTests.accepted()
        try verdict.attachToken(signer: signer, lifetimeSeconds: 600)
        let token = try #require(verdict.token)
        #expect(TokenTests.rejection { () throws(TokenRejection) in try verifier.verify(token, issuer: "attest-eu") } == nil)
        #expect(TokenTests.rejection { () throws(TokenRejection) in try verifier.verify(token) } == nil)
        for other in ["attest-worker", "attest-eu ", "ATTEST-EU", ""] {
            #expect(TokenTests.rejection { () throws(TokenRejection) in try verifier.verify(token, issuer: other) } == .issuerMismatch)
        }
        let noIssuer = try signer.sign(claims: .object([("exp", .int(TokenTests.issuedAt.seconds + 600))]))
        #expect(TokenTests.rejection { () throws(TokenRejection) in try verifier.verify(noIssuer, issuer: "attest-eu") } == .issuerMismatch)
    }
}
