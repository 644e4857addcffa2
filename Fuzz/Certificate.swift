import AttestCore
import AttestCrypto

/// X.509 certificates as the chain check reads them, with the extensions the verifier interprets
/// (basicConstraints, keyUsage, Apple's nonce) and the key handed to OpenSSL. The extension parsers also
/// get the raw input, which reaches their error paths faster than a certificate around it would.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCertificate(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    parseExtensionValue(bytes)
    guard let certificate = try? Certificate(der: bytes) else { return 0 }
    for ext in certificate.extensions { parseExtensionValue(ext.value) }
    _ = certificate.signatureAlgorithm.description
    _ = ECPublicKey(subjectPublicKeyInfo: certificate.subjectPublicKeyInfo)
    return 0
}

private func parseExtensionValue(_ value: [UInt8]) {
    _ = try? BasicConstraints(der: value)
    _ = try? KeyUsage(der: value)
    _ = AppleNonceExtension.nonce(from: value)
}
