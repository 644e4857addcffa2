import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import Testing

/// Hostile input never crashes or hangs a parser: thousands of seeded mutations of valid objects (bit
/// flips, insertions, deletions, truncations) go through every parser and the verifiers. The libFuzzer
/// targets explore further; this keeps a deterministic floor in every test run.
@Suite struct RobustnessTests {
    typealias F = MintFixture

    /// SplitMix64: a small deterministic generator, so a failure reproduces.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func mutations(of bytes: [UInt8], count: Int, seed: UInt64) -> [[UInt8]] {
        var rng = SeededGenerator(state: seed)
        return (0..<count).map { _ in
            var b = bytes
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let i = b.isEmpty ? 0 : Int.random(in: 0..<b.count, using: &rng)
                switch Int.random(in: 0..<5, using: &rng) {
                case 0 where !b.isEmpty: b[i] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng))
                case 1 where !b.isEmpty: b[i] = UInt8.random(in: 0...255, using: &rng)
                case 2: b.insert(UInt8.random(in: 0...255, using: &rng), at: i)
                case 3 where !b.isEmpty: b.remove(at: i)
                default: b = Array(b.prefix(i))
                }
            }
            return b
        }
    }

    @Test func mutatedAttestationsNeverCrashTheVerifierNorPass() {
        // Without the root's copy in the CMS (never used, so its bytes may change freely), every byte of the
        // object is covered by a signature or checked structure: no mutation may be accepted.
        let options = AttestationOptions(receipt: .signed(ReceiptOptions(includeRootCertificate: false)))
        let original = F.mint(options).attestationObject
        let verifier = AttestationVerifier(trust: F.trust)
        for mutated in Self.mutations(of: original, count: 3000, seed: 1) where mutated != original {
            let result = verifier.verify(F.request(mutated), policy: .production, at: F.time)
            #expect(result.outcome != "ok")
        }
    }

    @Test func mutatedAssertionsNeverCrashTheVerifier() {
        let original = try! F.device.mintAssertion(
            teamId: F.teamId, bundleId: F.bundleId, clientDataHash: F.clientDataHash, counter: 9,
            options: AssertionOptions(extensions: .appleExtensions())
        ).assertion
        let device = StoredDevice(publicKey: ECPublicKey(p256Point: F.device.publicKeyX962)!, counter: 1)
        for mutated in Self.mutations(of: original, count: 3000, seed: 2) {
            let request = AssertionRequest(
                teamId: F.teamId, bundleId: F.bundleId, keyId: Base64.encode(F.device.keyId),
                assertion: Base64.encode(mutated), clientData: .hash(Base64.encode(F.clientDataHash)))
            _ = AssertionVerifier().verify(request, device: device)
        }
    }

    @Test func mutatedCertificatesReceiptsAndJSONNeverCrashTheirParsers() {
        let minted = F.mint()
        for mutated in Self.mutations(of: minted.leafDER, count: 2000, seed: 3) {
            _ = try? Certificate(der: mutated)
        }
        for mutated in Self.mutations(of: minted.receipt!, count: 2000, seed: 4) {
            _ = try? SignedData(ber: mutated)
        }
        let job = Array(#"{"jobId":"j","kind":"assertion","teamId":"T","a":[1,2.5e3,{"b":null}],"s":"\u00e9\n"}"#.utf8)
        for mutated in Self.mutations(of: job, count: 3000, seed: 5) {
            if let value = JSONValue.parse(mutated) { _ = Job.parse(value) }
        }
    }
}
