import AttestCore
import AttestJobs
import AttestTokens
import AttestVerifier

/// A verdict token and a key set from a relying party's side: the input as a token checked against a
/// fixed key set at the seed token's time (so mutations reach the claims), and as a JWKS document.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzToken(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    _ = try? tokenVerifier.verify(String(decoding: input, as: UTF8.self), audience: "A1B2C3D4E5.com.example.refapp")
    if let jwks = JWKS(json: input) { _ = jwks.json.serialized() }
    return 0
}

/// The public key of the fixed test key the seed token (Fuzz/seeds.py) was signed with.
private let tokenVerifier = TokenVerifier(
    jwks: JWKS(json: Array("""
        {"keys":[{"kty":"EC","crv":"P-256","x":"9jVEEa263v9sxkb8cWHQapcslv3dFIEAKHLMCOd-ywo",\
        "y":"EDfmjWMWklv4ocGXcPKqa6H0s3_K9TXLvsNVG5s0BYI","kid":"-H5apFJ7WdEsA3ZycbJl6S_pf3f2aPN5ocOaaFA4GXE"}]}
        """.utf8))!,
    clock: FixedClock(Timestamp(seconds: 1_777_636_810)))
