import AttestCore

/// Authenticator data as an attestation carries it (header, attested credential data with its COSE key,
/// extension map) and as an assertion does (header and extension map only).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAuthenticatorData(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    if let parsed = try? AuthenticatorData.attestation(bytes) {
        // The verdict reads these from accepted data.
        _ = parsed.extensions?.otherKeys
        _ = parsed.extensions?.validationCategoryNumber
    }
    _ = try? AuthenticatorData.assertion(bytes)
    return 0
}
