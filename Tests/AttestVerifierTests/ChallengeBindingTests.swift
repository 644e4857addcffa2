import AttestCore
import AttestJobs
import AttestMint
@testable import AttestVerifier
import Testing

/// The binding search is linear in clientData whatever the bytes (counted comparisons, no timing), and a
/// challenge over 512 bytes is refused before any of it runs, in the job reader and in both verifiers.
@Suite struct ChallengeBindingTests {
    /// What the search must agree with: every start position, every byte.
    private static func naiveContains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }

    /// Inputs that make a naive search quadratic (long near-matches at every position), periodic ones that
    /// exercise the failure table's fallbacks, and the reproduced attack's sizes.
    private static let adversarial: [(name: String, haystack: [UInt8], needle: [UInt8], found: Bool)] = [
        ("a* vs a*b", [UInt8](repeating: 0x61, count: 140_000), [UInt8](repeating: 0x61, count: 511) + [0x62], false),
        ("a* vs ba*", [UInt8](repeating: 0x61, count: 140_000), [0x62] + [UInt8](repeating: 0x61, count: 511), false),
        ("(ab)* vs (ab)*aa", Array(String(repeating: "ab", count: 70_000).utf8), Array((String(repeating: "ab", count: 255) + "aa").utf8), false),
        ("aab* vs aab*aaa", Array(String(repeating: "aab", count: 46_000).utf8), Array((String(repeating: "aab", count: 170) + "aaa").utf8), false),
        ("70,001-byte challenge", [UInt8](repeating: 0x41, count: 140_000), [UInt8](repeating: 0x41, count: 70_000) + [0x42], false),
        ("found at the end", [UInt8](repeating: 0x61, count: 140_000) + [0x62], [UInt8](repeating: 0x61, count: 511) + [0x62], true),
    ]

    @Test(arguments: 0..<6) func comparisonsStayWithinTwiceTheInput(_ index: Int) {
        let c = Self.adversarial[index]
        let result = ChallengeBinding.firstOccurrence(of: c.needle, in: c.haystack)
        #expect(result.found == c.found, "\(c.name)")
        #expect(result.comparisons <= 2 * (c.haystack.count + c.needle.count), "\(c.name): \(result.comparisons) comparisons")
    }

    @Test func agreesWithTheNaiveSearchOnSmallAlphabets() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let alphabet = UInt8.random(in: 1...3, using: &generator)
            let haystack = (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0..<alphabet, using: &generator) }
            let needle = (0..<Int.random(in: 1...8, using: &generator)).map { _ in UInt8.random(in: 0..<alphabet, using: &generator) }
            let result = ChallengeBinding.firstOccurrence(of: needle, in: haystack)
            #expect(result.found == Self.naiveContains(haystack, needle), "\(needle) in \(haystack)")
            #expect(result.comparisons <= 2 * (haystack.count + needle.count))
        }
    }

    @Test func theWorkGrowsLinearlyWithClientData() {
        let needle = [UInt8](repeating: 0x61, count: 511) + [0x62]
        let counts = [10_000, 100_000].map {
            ChallengeBinding.firstOccurrence(of: needle, in: [UInt8](repeating: 0x61, count: $0)).comparisons
        }
        // Ten times the clientData: about ten times the comparisons (a naive search does 512 per byte).
        #expect(counts[1] <= 11 * counts[0], "\(counts)")
        #expect(counts[1] <= 2 * 100_000 + 2 * needle.count)
    }

    @Test func bindingStillFindsTheChallengeOrItsDecodedBytes() {
        let challenge = Base64.encode(Array("issued-bytes".utf8))
        #expect(ChallengeBinding.assertionBinds(clientData: Array(#"{"challenge":"\#(challenge)"}"#.utf8), challenge: challenge))
        #expect(ChallengeBinding.assertionBinds(clientData: Array("xx issued-bytes yy".utf8), challenge: challenge))
        #expect(!ChallengeBinding.assertionBinds(clientData: Array("issued-byte".utf8), challenge: challenge))
        #expect(!ChallengeBinding.assertionBinds(clientData: [], challenge: challenge))
    }

    // MARK: The 512-byte bound

    /// 512 bytes pass the bound, 513 do not, counted in UTF-8 (257 "é" are 514 bytes).
    private static let limitCases: [(challenge: String, refused: Bool)] = [
        (String(repeating: "A", count: 512), false), (String(repeating: "A", count: 513), true),
        (String(repeating: "é", count: 256), false), (String(repeating: "é", count: 257), true),
        (String(repeating: "A", count: 70_001), true), ("", false),
    ]

    @Test func theLimitIs512BytesOfUTF8() {
        for c in Self.limitCases {
            let failure = VerifierLimits().challengeFailure(c.challenge)
            #expect((failure != nil) == c.refused, "\(c.challenge.utf8.count) bytes")
            if let failure { #expect(failure == VerificationFailure(.challengeInvalid, .tooLarge, "")) }
        }
        #expect(VerifierLimits().challengeFailure(nil) == nil)
    }

    @Test func bothVerifiersRefuseALongChallengeBeforeAnythingElse() {
        let tooLarge = VerificationFailure(.challengeInvalid, .tooLarge, "")
        for c in Self.limitCases {
            // Unusable inputs everywhere else: only the challenge bound may fire first.
            let assertion = AssertionRequest(
                teamId: "T", bundleId: "B", keyId: "!", assertion: "!", clientData: .raw(String(repeating: "QUFB", count: 35_000)),
                challenge: c.challenge)
            let attestation = AttestationRequest(
                teamId: "T", bundleId: "B", keyId: "!", attestationObject: "!", clientDataHash: "!", challenge: c.challenge)
            let asserted = AssertionVerifier().verify(assertion, device: nil)
            let attested = AttestationVerifier(trust: MintFixture.trust).verify(attestation, policy: .any, at: MintFixture.time)
            for failure in [asserted.failure, attested.failure] {
                #expect((failure == tooLarge) == c.refused, "\(c.challenge.utf8.count) bytes: \(String(describing: failure))")
            }
        }
    }

    @Test func theJobReaderRefusesALongChallengeWithItsOwnCode() {
        for c in Self.limitCases where !c.challenge.isEmpty {
            let json = JSONValue.object([
                ("jobId", .string("j")), ("kind", .string("assertion")), ("teamId", .string("ABCDE12345")), ("bundleId", .string("com.example.app")),
                ("keyId", .string("k")), ("assertion", .string("a")), ("clientData", .string("Y2Q=")),
                ("challenge", .string(c.challenge)), ("receivedAt", .string("2026-04-24T03:06:40Z")),
            ])
            switch Job.parse(json) {
            case .success: #expect(!c.refused, "\(c.challenge.utf8.count) bytes accepted")
            case .failure(let invalid):
                #expect(c.refused, "\(c.challenge.utf8.count) bytes: \(invalid.failure)")
                #expect(invalid.failure.description.hasPrefix("challenge_invalid/too_large"))
                #expect(invalid.jobId == "j")
            }
        }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
