import AttestCore
import AttestCrypto
import AttestJobs
import AttestVerifier

/// The input as the assertion of `asrt_valid`'s request, verified against that case's stored key and
/// counter: base64 and size limits, CBOR, authenticator data, the ECDSA signature, rpIdHash, counter.
/// That case's assertion is a seed and passes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAssertion(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var request = validAssertion.request
    request.assertion = Base64.encode(fuzzInput(data, size))
    _ = AssertionVerifier().verify(request, device: validAssertion.device)
    return 0
}

/// `asrt_valid`'s request (each input replaces its assertion) and stored device state.
private let validAssertion: (request: AssertionRequest, device: StoredDevice) = {
    let c = Vectors.vectorCase("asrt_valid")
    let request = AssertionRequest(
        teamId: Vectors.field(c, "teamId"), bundleId: Vectors.field(c, "bundleId"), keyId: Vectors.field(c, "keyId"),
        assertion: Vectors.field(c, "assertion"), clientData: .hash(Vectors.field(c, "clientDataHash")))
    guard let key = ECPublicKey(p256Point: Vectors.bytes(c, "storedPublicKey")),
        case .int(let n)? = c["storedCounter"], let counter = UInt32(exactly: n)
    else { fatalError("asrt_valid lacks a usable stored key and counter") }
    return (request, StoredDevice(publicKey: key, counter: counter))
}()
