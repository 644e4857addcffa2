import AttestCore
import AttestVerifier

/// The input as the attestation object of `att_valid_production`'s request, verified in full under the
/// test anchors at the case's time: base64 and size limits, CBOR, authenticator data, the chain with
/// OpenSSL's ECDSA, the nonce and key checks, and the receipt. That case's object is a seed and passes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAttestation(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var request = validAttestation.request
    request.attestationObject = Base64.encode(fuzzInput(data, size))
    _ = AttestationVerifier(trust: Vectors.freshTestTrust()).verify(request, policy: .any, at: validAttestation.time)
    return 0
}

/// `att_valid_production`'s request (each input replaces its attestation object) and time.
private let validAttestation: (request: AttestationRequest, time: Timestamp) = {
    let c = Vectors.vectorCase("att_valid_production")
    let request = AttestationRequest(
        teamId: Vectors.field(c, "teamId"), bundleId: Vectors.field(c, "bundleId"), keyId: Vectors.field(c, "keyId"),
        attestationObject: Vectors.field(c, "attestationObject"), clientDataHash: Vectors.field(c, "clientDataHash"))
    return (request, Vectors.time(c))
}()
