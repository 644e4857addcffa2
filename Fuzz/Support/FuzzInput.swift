/// The bytes libFuzzer hands to `LLVMFuzzerTestOneInput`, copied into an array as the parsers take them.
/// libFuzzer may pass a null pointer with a zero size; the buffer pointer accepts that.
func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    Array(UnsafeBufferPointer(start: data, count: size))
}
