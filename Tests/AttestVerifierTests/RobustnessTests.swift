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

    @Test func mutatedAssertionsNeverCrashTheVerifierNorPass() {
        let original = try! F.device.mintAssertion(
            teamId: F.teamId, bundleId: F.bundleId, clientDataHash: F.clientDataHash, counter: 9,
            options: AssertionOptions(extensions: .appleExtensions())
        ).assertion
        let device = StoredDevice(publicKey: ECPublicKey(p256Point: F.device.publicKeyX962)!, counter: 1)
        func verify(_ assertion: [UInt8]) -> Result<VerifiedAssertion, VerificationFailure> {
            AssertionVerifier().verify(
                AssertionRequest(
                    teamId: F.teamId, bundleId: F.bundleId, keyId: Base64.encode(F.device.keyId),
                    assertion: Base64.encode(assertion), clientData: .hash(Base64.encode(F.clientDataHash))),
                device: device)
        }
        // The untouched assertion verifies, so a refusal below is the mutation's doing.
        guard case .success = verify(original) else { Issue.record("the original assertion does not verify"); return }
        // Every byte is the signature or signed authenticator data in a strict encoding: no change may pass.
        for mutated in Self.mutations(of: original, count: 3000, seed: 2) where mutated != original {
            if case .success = verify(mutated) { Issue.record("a mutated assertion verified: \(Base64.encode(mutated))") }
        }
    }

    @Test func mutatedCertificatesReceiptsAndJSONNeverCrashTheirParsersNorPass() throws {
        let minted = F.mint()
        let intermediate = try Certificate(der: minted.intermediateDER)
        let chain = F.trust.attestation
        func accepted(_ leaf: Certificate) -> Bool {
            if case .success = chain.verify(leaf: leaf, intermediates: [intermediate], at: F.time) { true } else { false }
        }
        #expect(accepted(try Certificate(der: minted.leafDER)))
        // A mutated leaf that still parses is never one the chain accepts.
        for mutated in Self.mutations(of: minted.leafDER, count: 2000, seed: 3) where mutated != minted.leafDER {
            guard let leaf = try? Certificate(der: mutated) else { continue }
            #expect(!accepted(leaf), "\(Base64.encode(mutated))")
        }
        // A mutated receipt that still parses as CMS never verifies for the device.
        let receipts = F.trust.receipt
        let receipt = minted.receipt!
        func verifies(_ der: [UInt8]) -> Bool {
            (try? receipts.verify(der, expectedAppId: F.appId, attestedKey: F.device.publicKeyX962, at: F.time).get()) != nil
        }
        #expect(verifies(receipt))
        for mutated in Self.mutations(of: receipt, count: 2000, seed: 4) where mutated != receipt {
            guard (try? SignedData(ber: mutated)) != nil else { continue }
            // The root's copy in the CMS is never used, so its bytes may change freely.
            if verifies(mutated) && !Self.onlyTheRootCopyDiffers(mutated, receipt, root: F.pki.receiptRootDER) {
                Issue.record("a mutated receipt verified: \(Base64.encode(mutated))")
            }
        }
        // JSON that parses is a fixed point of serialize-and-parse, and every job it makes keeps its jobId.
        let job = Array(#"{"jobId":"j","kind":"assertion","teamId":"T","a":[1,2.5e3,{"b":null}],"s":"\u00e9\n"}"#.utf8)
        for mutated in Self.mutations(of: job, count: 3000, seed: 5) {
            guard let value = JSONValue.parse(mutated) else { continue }
            #expect(JSONValue.parse(Array(value.serialized().utf8)) == value, "\(String(decoding: mutated, as: UTF8.self))")
            if case .success(let parsed) = Job.parse(value) { #expect(value["jobId"] == .string(parsed.jobId)) }
        }
    }

    /// Whether `mutated` is `original` with bytes changed inside the included root certificate only.
    static func onlyTheRootCopyDiffers(_ mutated: [UInt8], _ original: [UInt8], root: [UInt8]) -> Bool {
        guard mutated.count == original.count, let start = original.firstRange(of: root)?.lowerBound else { return false }
        let rootRange = start..<(start + root.count)
        return mutated.indices.allSatisfy { mutated[$0] == original[$0] || rootRange.contains($0) }
    }
}
