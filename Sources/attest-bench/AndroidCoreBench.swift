import AttestCore
import AttestCrypto
import AttestMint
import AttestVerifier

/// The Android side of `bench core`: each measured path next to the raw OpenSSL verifies of the same
/// algorithms, keys and digests, parsed once beforehand (as `openssl speed` measures).
///
/// A cold attestation (a new verifier, its cache of verified issuers empty) verifies every signature of its
/// chain (the root's own included) and parses every certificate and the KeyDescription: its raw baseline is
/// the chain's signatures verified one after the other. A warm one (the verifier a worker keeps) finds
/// Google's root and intermediates verified and parsed already and verifies the device's own two
/// certificates (the leaf and its attestation key's): its baseline is those two verifies. An assertion verifies one signature with the stored key, parsed once (``AttestedAndroidKey``, as
/// a store keeps it): its raw baseline is that P-256 verify over the precomputed SHA-256 of the client data.
struct AndroidCoreBench {
    struct Measure {
        let name: String
        let body: () -> Void
    }

    let measures: [Measure]

    init() throws {
        let verifier = AndroidAttestationVerifier(trust: .google)
        var measures = [Measure]()
        for sample in [AndroidBenchSamples.ecRoot, AndroidBenchSamples.rsaRoot] {
            guard case .success = verifier.verify(sample.request, policy: sample.policy, at: sample.time) else {
                throw BenchmarkFailure("the Android \(sample.name) chain does not verify")
            }
            let raw = try Self.rawChainVerifies(sample.request.certificateChain)
            let rawLeaf = try Self.rawChainVerifies(sample.request.certificateChain, first: 1)
            guard raw(), rawLeaf() else { throw BenchmarkFailure("a raw verify of the Android \(sample.name) chain fails") }
            measures.append(Measure(name: "raw verifies, whole chain, \(sample.name)") { _ = raw() })
            measures.append(Measure(name: "attestation, cold, \(sample.name)") {
                _ = AndroidAttestationVerifier(trust: .google).verify(sample.request, policy: sample.policy, at: sample.time)
            })
            measures.append(Measure(name: "raw verify, leaf, \(sample.name)") { _ = rawLeaf() })
            measures.append(Measure(name: "attestation, warm, \(sample.name)") {
                _ = verifier.verify(sample.request, policy: sample.policy, at: sample.time)
            })
        }
        let device = try AndroidDeviceKey(curve: .p256)
        let clientData = Array(#"{"path":"/v1/orders","amount":1200,"challenge":"c-7f3a9b2e5d1c4a8f"}"#.utf8)
        let signature = try device.sign(message: clientData)
        let stored = AttestedAndroidKey(subjectPublicKeyInfo: device.subjectPublicKeyInfo)
        let request = AndroidAssertionRequest(
            keyId: device.keyId, signature: Base64.encode(signature), clientData: Base64.encode(clientData),
            challenge: "c-7f3a9b2e5d1c4a8f")
        let assertions = AndroidAssertionVerifier()
        guard let rawKey = ECPublicKey(subjectPublicKeyInfo: device.subjectPublicKeyInfo)?.makeReusableVerifier() else {
            throw BenchmarkFailure("cannot load the Android device key")
        }
        let digest = Digest.sha256.hash(clientData)
        guard assertions.verify(request, storedKey: stored) == nil, rawKey.verify(signature: signature, digest: digest) else {
            throw BenchmarkFailure("the Android assertion does not verify")
        }
        measures.append(Measure(name: "raw P-256 verify, Android device key") { _ = rawKey.verify(signature: signature, digest: digest) })
        measures.append(Measure(name: "assertion") { _ = assertions.verify(request, storedKey: stored) })
        self.measures = measures
    }

    /// The signatures of the chain's `first` certificates (all by default) verified under their issuers' keys
    /// (the root's under its own), keys parsed and digests computed beforehand; EC keys with one reused
    /// context, RSA keys as RSAPublicKey verifies.
    static func rawChainVerifies(_ chain: [String], first: Int = .max) throws -> () -> Bool {
        let certificates = try chain.map { try Certificate(der: Base64.decode($0)!) }
        var verifies = [() -> Bool]()
        for (i, certificate) in certificates.enumerated().prefix(first) {
            let issuer = certificates[min(i + 1, certificates.count - 1)]
            guard let digestKind = Digest(signatureAlgorithm: certificate.signatureAlgorithm) else {
                throw BenchmarkFailure("certificate \(i): unknown signature algorithm")
            }
            let digest = digestKind.hash(certificate.tbsBytes)
            let signature = certificate.signature
            let key = SignatureKey(subjectPublicKeyInfo: issuer.subjectPublicKeyInfo, algorithm: issuer.keyAlgorithm)
            if let ec = key?.ec {
                guard let reusable = ec.makeReusableVerifier() else { throw BenchmarkFailure("certificate \(i): issuer key") }
                verifies.append { reusable.verify(signature: signature, digest: digest) }
            } else if let rsa = key?.rsa {
                verifies.append { rsa.verify(signature: signature, digest: digest, algorithm: digestKind) }
            } else {
                throw BenchmarkFailure("certificate \(i): unsupported issuer key")
            }
        }
        return { verifies.allSatisfy { $0() } }
    }
}
