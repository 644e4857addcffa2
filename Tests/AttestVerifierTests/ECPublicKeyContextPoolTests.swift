import AttestCore
@testable import AttestCrypto
import AttestMint
import Foundation
import Synchronization
import Testing

/// The pool of initialised verification contexts each key keeps: one context for a key used on one
/// thread at a time, more only while threads verify at once, never more than `maxIdle` kept, and every
/// context, pooled, new or given back, deciding signatures as a fresh one would.
@Suite struct ECPublicKeyContextPoolTests {
    static let device = try! Device()
    static let clientDataHash = Digest.sha256.hash(Array("context-pool-tests".utf8))

    /// A signature by the device and the digest it signs, with a digest it does not sign.
    static func signed() -> (signature: [UInt8], digest: [UInt8], wrong: [UInt8]) {
        let minted = try! device.mintAssertion(
            teamId: "TEAM123456", bundleId: "com.example.pool", clientDataHash: clientDataHash, counter: 1)
        let digest = Digest.sha256OfSHA256(minted.authenticatorData, clientDataHash)
        var wrong = digest
        wrong[31] ^= 0x01
        return (minted.signature, digest, wrong)
    }

    @Test func oneThreadKeepsTheOneContextMadeAtImport() {
        let (signature, digest, wrong) = Self.signed()
        let key = ECPublicKey(p256Point: Self.device.publicKeyX962)!
        #expect(key.idleContexts == 0)
        for _ in 0..<50 {
            #expect(key.verify(signature: signature, digest: digest))
            #expect(!key.verify(signature: signature, digest: wrong))
            #expect(!key.verify(signature: [0x30, 0x00], digest: digest))
        }
        #expect(key.idleContexts == 1)
    }

    /// Contexts taken while none is idle are made on demand; given back, the pool keeps `maxIdle` of them.
    @Test func poolGrowsOnDemandAndKeepsAtMostMaxIdle() {
        let (signature, digest, wrong) = Self.signed()
        let key = ECPublicKey(p256Point: Self.device.publicKeyX962)!
        let held = (0..<(ECPublicKey.Imported.maxIdle + 3)).map { _ in key.takeContext()! }
        #expect(key.idleContexts == 0)
        #expect(Set(held.map { UInt(bitPattern: $0.1) }).count == held.count)
        for (_, context) in held {
            #expect(ECPublicKey.verify(signature: signature, digest: digest, with: context))
            #expect(!ECPublicKey.verify(signature: signature, digest: wrong, with: context))
        }
        for (imported, context) in held { key.giveBack(context, to: imported) }
        #expect(key.idleContexts == ECPublicKey.Imported.maxIdle)
        #expect(key.verify(signature: signature, digest: digest))
        #expect(!key.verify(signature: signature, digest: wrong))
        #expect(key.idleContexts == ECPublicKey.Imported.maxIdle)
    }

    /// Many threads verifying with one key at once (good and bad signatures interleaved) all decide right,
    /// and the pool ends within its bound.
    @Test func concurrentVerifiesDecideRightAndStayBounded() {
        let (signature, digest, wrong) = Self.signed()
        let key = ECPublicKey(p256Point: Self.device.publicKeyX962)!
        let threads = 12
        let results = Mutex([Bool](repeating: false, count: threads))
        let done = DispatchGroup()
        for index in 0..<threads {
            done.enter()
            Thread {
                var right = true
                for round in 0..<100 {
                    right = right && key.verify(signature: signature, digest: digest)
                    right = right && !key.verify(signature: signature, digest: round % 2 == 0 ? wrong : Array(digest.reversed()))
                }
                results.withLock { $0[index] = right }
                done.leave()
            }.start()
        }
        done.wait()
        #expect(results.withLock { $0 }.allSatisfy { $0 })
        #expect((1...ECPublicKey.Imported.maxIdle).contains(key.idleContexts))
    }
}
