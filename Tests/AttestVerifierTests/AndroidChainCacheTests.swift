import AttestCore
import AttestMint
import AttestVerifier
import Foundation
import Testing

/// The Android chain verifier's cache of verified issuers changes no verdict: a verifier warmed with valid
/// chains of the same PKI (the attestation key certificate a CA, and an end entity as Sony's) decides
/// every faulty chain exactly as a fresh one does, keeps checking validity periods of the certificates it
/// cached, and verifies the shared certificates once.
@Suite struct AndroidChainCacheTests {
    typealias Options = AndroidAttestationOptions
    static let validFrom = Date(timeIntervalSince1970: 1_577_836_800)  // 2020-01-01
    static let validUntil = Date(timeIntervalSince1970: 1_893_456_000)  // 2030-01-01
    static let validUntilTime = Timestamp(seconds: 1_893_456_000)
    static let time = Timestamp(seconds: 1_777_000_000)
    static let pki = try! AndroidTestPKI.generate(validFrom: validFrom, validUntil: validUntil)
    static let sonyPKI = try! AndroidTestPKI.generate(validFrom: validFrom, validUntil: validUntil, attestationKeyIsCA: false)
    static let trust = try! AndroidTrust(rootCertificatesPEM: pki.rootPEM + sonyPKI.rootPEM)
    static let policy = AndroidPolicy(packageName: "com.example.catalogue", signingCertificateDigests: [Options.defaultSigningCertificateDigest])

    static func request(_ pki: AndroidTestPKI, _ change: (inout Options) -> Void = { _ in }) -> AndroidAttestationRequest {
        var options = Options()
        change(&options)
        let minted = try! pki.mintAttestation(options: options)
        return AndroidAttestationRequest(certificateChain: minted.certificateChain, challenge: minted.challenge)
    }

    static func outcome(_ result: Result<VerifiedAndroidAttestation, VerificationFailure>) -> String {
        switch result {
        case .success: "ok"
        case .failure(let failure): "\(failure.code.rawValue)/\(failure.reason.rawValue)"
        }
    }

    /// Faults of the certificates above the leaf, which are the ones the cache could stand in for.
    static let faults: [(String, @Sendable (inout Options) -> Void)] = [
        ("valid", { _ in }),
        ("leaf signature", { $0.tamperedSignature = .leaf }),
        ("attestation key signature", { $0.tamperedSignature = .attestationKey }),
        ("intermediate signature", { $0.tamperedSignature = .intermediate }),
        ("root signature", { $0.tamperedSignature = .root }),
        ("intermediate and attestation key swapped", { $0.chainOrder = [.leaf, .intermediate, .attestationKey, .root] }),
        ("intermediate left out", { $0.chainOrder = [.leaf, .attestationKey, .root] }),
        ("intermediate not a CA", { $0.intermediate = Options.Reissue(isCA: false) }),
        ("intermediate path length 0", { $0.intermediate = Options.Reissue(isCA: true, pathLength: 0) }),
        ("leaf outside its validity, which is the device's", { $0.leafNotAfter = Date(timeIntervalSince1970: 1_700_000_000) }),
        ("attestation key expired", { $0.attestationKeyCertificate = Options.Reissue(notAfter: Date(timeIntervalSince1970: 1_700_000_000)) }),
    ]

    @Test func aWarmVerifierDecidesEveryFaultAsAFreshOne() {
        let warm = AndroidAttestationVerifier(trust: Self.trust)
        for pki in [Self.pki, Self.sonyPKI] {
            #expect(Self.outcome(warm.verify(Self.request(pki), policy: Self.policy, at: Self.time)) == "ok")
        }
        for pki in [Self.pki, Self.sonyPKI] {
            for (name, fault) in Self.faults {
                let request = Self.request(pki, fault)
                let fresh = Self.outcome(AndroidAttestationVerifier(trust: Self.trust).verify(request, policy: Self.policy, at: Self.time))
                #expect(Self.outcome(warm.verify(request, policy: Self.policy, at: Self.time)) == fresh, "\(name)")
                #expect((fresh == "ok") == (name == "valid" || name.hasPrefix("leaf outside")), "\(name): \(fresh)")
            }
        }
    }

    @Test func cachedCertificatesAreStillCheckedForValidity() {
        let warm = AndroidAttestationVerifier(trust: Self.trust)
        let request = Self.request(Self.pki)
        #expect(Self.outcome(warm.verify(request, policy: Self.policy, at: Self.time)) == "ok")
        let afterIntermediates = Self.validUntilTime.adding(seconds: 1)
        #expect(Self.outcome(warm.verify(request, policy: Self.policy, at: afterIntermediates)) == "android_validation_failed/certificate_expired")
        #expect(Self.outcome(warm.verify(request, policy: Self.policy, at: Self.validUntilTime)) == "ok")
    }

    @Test func sharedCertificatesAreVerifiedOnce() {
        let warm = AndroidAttestationVerifier(trust: Self.trust)
        for _ in 0..<3 {
            #expect(Self.outcome(warm.verify(Self.request(Self.pki), policy: Self.policy, at: Self.time)) == "ok")
        }
        // Root, intermediate and attestation key: cached by the first chain, found by the next two.
        #expect(warm.chains.cache.count == 3)
        #expect(warm.chains.cache.counts.misses == 3)
        #expect(warm.chains.cache.counts.hits == 6)
    }
}
