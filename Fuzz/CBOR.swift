import AttestCore

/// The strict CBOR decoder on arbitrary bytes: the whole input as one item, and every item that starts
/// where the previous one ended (as authenticator data reads its COSE key and extension map).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCBOR(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    let decoder = CBORDecoder()
    _ = try? decoder.decode(bytes)
    var offset = 0
    while offset < bytes.count, let (_, end) = try? decoder.decodePrefix(bytes, from: offset) {
        offset = end
    }
    return 0
}
