/// The CBOR assertion `{signature, authenticatorData}` (docs/CHECK_ORDER.md assertion step 2).
public struct AssertionObject: Sendable {
    public enum Failure: Error, Sendable, Equatable {
        case malformed(String)
        case trailingData
    }

    public let signature: [UInt8]
    public let authenticatorData: [UInt8]

    public init(cbor bytes: [UInt8], maxDepth: Int = 16) throws(Failure) {
        let top = try CBORDecoder(maxDepth: maxDepth).decodeObjectMap(
            bytes, trailing: Failure.trailingData, malformed: Failure.malformed)
        guard case .bytes(let signature)? = top["signature"] else { throw .malformed("signature missing or not bytes") }
        guard case .bytes(let authData)? = top["authenticatorData"], authData.count >= 37 else {
            throw .malformed("authenticatorData missing, not bytes or shorter than 37 bytes")
        }
        self.signature = signature
        self.authenticatorData = authData
    }
}
