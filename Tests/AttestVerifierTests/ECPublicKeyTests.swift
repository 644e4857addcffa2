import AttestCore
import AttestCrypto
import AttestMint
import Testing

/// The key wrapper's import and verification: one initialised context copied per call must decide every
/// signature as a fresh context would, from any thread, whatever was verified before.
@Suite struct ECPublicKeyTests {
    static let device = try! Device()
    static let digest = Digest.sha256.hash(Array("ecpublickey-tests".utf8))

    @Test func verifiesAgainAfterAFailure() {
        let key = ECPublicKey(p256Point: Self.device.publicKeyX962)!
        let minted = try! Self.device.mintAssertion(
            teamId: "TEAM123456", bundleId: "com.example.keys", clientDataHash: Self.digest, counter: 1)
        let digest = Digest.sha256.hash(Digest.sha256(minted.authenticatorData, Self.digest))
        var wrongDigest = digest
        wrongDigest[0] ^= 1
        for _ in 0..<3 {
            #expect(key.verify(signature: minted.signature, digest: digest))
            #expect(!key.verify(signature: minted.signature, digest: wrongDigest))
            #expect(!key.verify(signature: [0x30, 0x00], digest: digest))
            #expect(!key.verify(signature: [], digest: digest))
        }
        #expect(key.verify(signature: minted.signature, digest: digest))
    }

    @Test func concurrentVerificationsWithOneKeyAllDecideAlike() async {
        let key = ECPublicKey(p256Point: Self.device.publicKeyX962)!
        let minted = try! Self.device.mintAssertion(
            teamId: "TEAM123456", bundleId: "com.example.keys", clientDataHash: Self.digest, counter: 1)
        let digest = Digest.sha256.hash(Digest.sha256(minted.authenticatorData, Self.digest))
        let wrongDigest = Array(digest.dropLast()) + [digest[31] ^ 0x80]
        let results = await withTaskGroup(of: (Bool, Bool).self) { group in
            for _ in 0..<16 {
                group.addTask {
                    var good = true
                    var bad = false
                    for _ in 0..<20 {
                        good = good && key.verify(signature: minted.signature, digest: digest)
                        bad = bad || key.verify(signature: minted.signature, digest: wrongDigest)
                    }
                    return (good, bad)
                }
            }
            return await group.reduce(into: [(Bool, Bool)]()) { $0.append($1) }
        }
        #expect(results.count == 16)
        #expect(results.allSatisfy { $0.0 && !$0.1 })
    }

    /// Every import path checks the point against the curve (a copy of the curve's parameters given the point).
    @Test func rejectsPointsOffTheCurve() {
        var point = Self.device.publicKeyX962
        #expect(ECPublicKey(p256Point: point) != nil)
        point[64] ^= 1
        #expect(ECPublicKey(p256Point: point) == nil)
        let prefix: [UInt8] = [
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
            0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
        ]
        #expect(ECPublicKey(subjectPublicKeyInfo: prefix + Self.device.publicKeyX962) != nil)
        #expect(ECPublicKey(subjectPublicKeyInfo: prefix + point) == nil)
        #expect(ECPublicKey(p256Point: [0x04] + [UInt8](repeating: 0, count: 64)) == nil)
    }

    /// Keys imported one after another share nothing but the curve: each verifies its own signatures only.
    @Test func importedKeysAreIndependent() {
        let other = try! Device()
        let mine = ECPublicKey(p256Point: Self.device.publicKeyX962)!
        let theirs = ECPublicKey(p256Point: other.publicKeyX962)!
        let minted = try! Self.device.mintAssertion(
            teamId: "TEAM123456", bundleId: "com.example.keys", clientDataHash: Self.digest, counter: 1)
        let digest = Digest.sha256.hash(Digest.sha256(minted.authenticatorData, Self.digest))
        #expect(mine.verify(signature: minted.signature, digest: digest))
        #expect(!theirs.verify(signature: minted.signature, digest: digest))
    }

    /// A point key becomes an EVP_PKEY at its first use, whichever use comes first, and decides alike after.
    @Test func deferredImportServesEveryUse() {
        let minted = try! Self.device.mintAssertion(
            teamId: "TEAM123456", bundleId: "com.example.keys", clientDataHash: Self.digest, counter: 1)
        let digest = Digest.sha256.hash(Digest.sha256(minted.authenticatorData, Self.digest))
        let first = ECPublicKey(p256Point: Self.device.publicKeyX962)!
        let reusable = first.makeReusableVerifier()
        #expect(reusable?.verify(signature: minted.signature, digest: digest) == true)
        #expect(first.verify(signature: minted.signature, digest: digest))
        let second = ECPublicKey(p256Point: Self.device.publicKeyX962)!
        #expect(second.verify(signature: minted.signature, digest: Digest.sha256.hash(digest)) == false)
        #expect(second.makeReusableVerifier()?.verify(signature: minted.signature, digest: digest) == true)
    }
}
