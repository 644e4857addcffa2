import AttestCore
import AttestCrypto
import AttestVerifier
import Foundation

/// Android attestations: the input as a KeyDescription (the parser's error paths), as a certificate whose
/// KeyDescription is parsed, as a stored key's SubjectPublicKeyInfo, as a status list, and as the leaf of a
/// real device chain run through every check of `AndroidAttestationVerifier`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAndroid(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    _ = try? KeyDescription(der: bytes)
    _ = SubjectPublicKeyInfo.algorithm(of: bytes)
    _ = try? AndroidStatusList(json: bytes)
    guard let leaf = try? Certificate(der: bytes) else { return 0 }
    if let ext = leaf.extension(.androidKeyDescription) { _ = try? KeyDescription(der: ext.value) }
    let chain = [Base64.encode(bytes)] + RealChain.above
    let request = AndroidAttestationRequest(certificateChain: chain, challenge: RealChain.challenge)
    _ = RealChain.verifier.verify(request, policy: RealChain.policy, at: leaf.notBefore)
    return 0
}

/// A real device's chain above its leaf (Tests/Fixtures/android), whose root is a pinned Google root, so
/// an input certificate that chains reaches the KeyDescription checks.
enum RealChain {
    static let pem = try! String(
        contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/Fixtures/android/tegu_sdk36_TEE_EC_2026_ROOT.pem"), encoding: .utf8)
    static let above = PEM.decodeAll(pem)!.dropFirst().map { Base64.encode($0) }
    static let challenge = "NjQxN2Y5MmMtZGFlZi00Y2MxLTg4MjgtNWJiMzkzMzhmZmQ1"
    static let policy = AndroidPolicy(packageName: "com.google.android.attestation", signingCertificateDigests: nil)
    static let verifier = AndroidAttestationVerifier(trust: .google)
}
