import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import Foundation

/// The Android side of a minted stream's app: a fresh Android test PKI (the worker trusts its root through
/// ATTEST_ANDROID_TRUST_ANCHORS, which it logs as a warning), the app's package and the digest of its
/// signing certificate, as `attest-worker app add --android-package P --android-signing-digests D` takes them.
struct BenchAndroidApp: Sendable {
    /// The signing certificate's SHA-256 the minted attestations name: a fixed value, as `apksigner` would
    /// print it for a real app.
    static let signer = Digest.sha256.hash(Array("attest-bench's Android signing certificate".utf8))

    let pki: AndroidTestPKI
    let packageName: String

    init(packageName: String, validFrom: Date, validUntil: Date) throws {
        guard AndroidJob.packageNameProblem(packageName) == nil else {
            throw BenchmarkFailure("\(packageName): \(AndroidJob.packageNameProblem(packageName)!)")
        }
        self.packageName = packageName
        pki = try AndroidTestPKI.generate(validFrom: validFrom, validUntil: validUntil)
    }

    /// The signing digest in hex, for `--android-signing-digests`.
    var signerHex: String { Hex.encode(Self.signer) }

    /// What the app's registration requires of Android attestations.
    var policy: AndroidPolicy { AndroidPolicy(packageName: packageName, signingCertificateDigests: [Self.signer]) }

    /// The trust the worker gets from the root's PEM.
    func trust() throws -> AndroidTrust { try AndroidTrust(rootCertificatesPEM: pki.rootPEM) }

    /// An android_attestation job for `key` (keyed by the leaf's keyId), its challenge the SHA-256 of the jobId.
    func attestation(_ key: AndroidDeviceKey, jobId: String, pki other: AndroidTestPKI? = nil, expectedOK: Bool) throws -> PipelineWorkload.Message {
        var options = AndroidAttestationOptions(
            challenge: Digest.sha256.hash(Array(jobId.utf8)), deviceKey: key, packageName: packageName)
        options.signingCertificateDigests = [Self.signer]
        let minted = try (other ?? pki).mintAttestation(options: options)
        return PipelineWorkload.Message(jobId: jobId, keyId: minted.keyId, expectedOK: expectedOK, [
            ("kind", .string("android_attestation")), ("packageName", .string(packageName)),
            ("certificateChain", .array(minted.certificateChain.map(JSONValue.string))),
            ("challenge", .string(minted.challenge)),
        ])
    }

    /// An android_assertion job of `key` (keyed by its keyId): a request whose client data carries the
    /// challenge (the SHA-256 of the jobId, base64), signed by `signer` (`key` unless told) and carrying
    /// `presented` as its challenge field (the same unless told).
    func assertion(
        _ key: AndroidDeviceKey, jobId: String, signer: AndroidDeviceKey? = nil, presented: String? = nil, expectedOK: Bool
    ) throws -> PipelineWorkload.Message {
        let challenge = Base64.encode(Digest.sha256.hash(Array(jobId.utf8)))
        let clientData = Array("{\"challenge\":\"\(challenge)\",\"action\":\"transfer\"}".utf8)
        return PipelineWorkload.Message(jobId: jobId, keyId: key.keyId, expectedOK: expectedOK, [
            ("kind", .string("android_assertion")), ("packageName", .string(packageName)), ("keyId", .string(key.keyId)),
            ("signature", .string(Base64.encode(try (signer ?? key).sign(message: clientData)))),
            ("clientData", .string(Base64.encode(clientData))), ("challenge", .string(presented ?? challenge)),
        ])
    }
}
