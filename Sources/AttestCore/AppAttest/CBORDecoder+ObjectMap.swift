extension CBORDecoder {
    /// The one top-level map of an attestation or assertion object. Bytes after it are `trailing`, a reason
    /// of its own in both objects' steps; any other decoding failure is `malformed` with the decoder's account.
    func decodeObjectMap<Failure: Error>(
        _ bytes: [UInt8], trailing: Failure, malformed: (String) -> Failure
    ) throws(Failure) -> CBORValue {
        do {
            return try decodeMap(bytes)
        } catch {
            throw error.kind == .trailingData ? trailing : malformed("\(error)")
        }
    }
}
