import AttestCore
import AttestCrypto
import AttestMint
import Foundation
import Testing

/// Android jobs minted under a test PKI the worker trusts through ATTEST_ANDROID_TRUST_ANCHORS, for apps
/// registered with `androidSigner` as their signing certificate.
enum AndroidJobs {
    static let pki = try! AndroidTestPKI.generate(
        validFrom: Date(timeIntervalSince1970: 1_577_836_800), validUntil: Date(timeIntervalSince1970: 2_366_841_600))
    /// The SHA-256 of the test app's signing certificate, as `apksigner` prints it.
    static let signer = Digest.sha256.hash(Array("attest-worker integration tests' signing certificate".utf8))

    static let anchorFile: String = {
        let path = TestFiles.directory.appendingPathComponent("android-root.pem").path
        try! pki.rootPEM.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }()

    /// A package name of its own for a test's app.
    static func package() -> String { "com.example.itest.a\(UUID().uuidString.prefix(8).lowercased())" }

    /// The options `app add` takes for `package` signed by ``signer``.
    static func registration(_ package: String) -> [String] {
        ["--android-package", package, "--android-signing-digests", Hex.encode(signer)]
    }

    /// A key attestation job for `key`, with `challenge` (base64 of its bytes) as the app's attestation challenge.
    static func attestation(
        _ key: AndroidDeviceKey, package: String, jobId: String, challenge: [UInt8]? = nil, receivedAt: Date = Date(),
        metadata: [(String, JSONValue)] = []
    ) -> [UInt8] {
        let challenge = challenge ?? Digest.sha256.hash(Array(jobId.utf8))
        var options = AndroidAttestationOptions(challenge: challenge, deviceKey: key, packageName: package)
        options.signingCertificateDigests = [signer]
        let minted = try! pki.mintAttestation(options: options)
        return json([
            ("jobId", .string(jobId)), ("kind", .string("android_attestation")), ("packageName", .string(package)),
            ("certificateChain", .array(minted.certificateChain.map(JSONValue.string))),
            ("challenge", .string(minted.challenge)), ("receivedAt", .string(Jobs.timestamp(receivedAt))),
        ] + metadata)
    }

    /// A request `key` signed, its client data carrying `challenge`.
    static func assertion(_ key: AndroidDeviceKey, package: String, jobId: String, challenge: String? = nil, receivedAt: Date = Date()) -> [UInt8] {
        let challenge = challenge ?? Base64.encode(Digest.sha256.hash(Array(jobId.utf8)))
        let clientData = Array("{\"challenge\":\"\(challenge)\",\"action\":\"transfer\"}".utf8)
        return json([
            ("jobId", .string(jobId)), ("kind", .string("android_assertion")), ("packageName", .string(package)),
            ("keyId", .string(key.keyId)), ("signature", .string(Base64.encode(try! key.sign(message: clientData)))),
            ("clientData", .string(Base64.encode(clientData))), ("challenge", .string(challenge)),
            ("receivedAt", .string(Jobs.timestamp(receivedAt))),
        ])
    }

    private static func json(_ members: [(String, JSONValue)]) -> [UInt8] { Array(JSONValue.object(members).serialized().utf8) }
}
