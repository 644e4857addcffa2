/// WebAuthn authenticator data as App Attest produces it:
/// rpIdHash(32) ‖ flags(1) ‖ signCount(4, big-endian) ‖ [attested credential data] ‖ [Apple extension map].
public struct AuthenticatorData: Sendable {
    public static let flagAttestedCredentialData: UInt8 = 0x40
    public static let flagExtensionData: UInt8 = 0x80
    static let headerLength = 37

    public let bytes: [UInt8]
    public let rpIdHash: ArraySlice<UInt8>
    public let flags: UInt8
    public let counter: UInt32
    /// Present for attestations only: assertions never read attested data, whatever the AT flag says.
    public let credential: AttestedCredentialData?
    public let extensions: AppleExtensions?

    /// Parses an attestation's authenticator data: AT must be set and the credential data present.
    public static func attestation(_ bytes: [UInt8], maxDepth: Int = 16) throws(AuthenticatorDataError) -> Self {
        try Self(bytes, readsCredential: true, maxDepth: maxDepth)
    }

    /// Parses an assertion's authenticator data: the header and an optional extension map, nothing else.
    public static func assertion(_ bytes: [UInt8], maxDepth: Int = 16) throws(AuthenticatorDataError) -> Self {
        try Self(bytes, readsCredential: false, maxDepth: maxDepth)
    }

    private init(_ bytes: [UInt8], readsCredential: Bool, maxDepth: Int) throws(AuthenticatorDataError) {
        guard bytes.count >= Self.headerLength else { throw .malformed("authenticator data shorter than 37 bytes") }
        self.bytes = bytes
        rpIdHash = bytes[0..<32]
        flags = bytes[32]
        counter = UInt32(bytes[33]) << 24 | UInt32(bytes[34]) << 16 | UInt32(bytes[35]) << 8 | UInt32(bytes[36])
        var offset = Self.headerLength
        if readsCredential {
            guard flags & Self.flagAttestedCredentialData != 0 else { throw .malformed("AT flag clear") }
            let (credential, end) = try AttestedCredentialData.parse(bytes, from: offset, maxDepth: maxDepth)
            self.credential = credential
            offset = end
        } else {
            credential = nil
        }
        if offset == bytes.count {
            guard flags & Self.flagExtensionData == 0 else { throw .malformed("ED flag set without extensions") }
            extensions = nil
            return
        }
        // Whatever follows must be exactly one CBOR map, ED flag or not (Apple's 2026 objects omit ED).
        guard case (.map(let entries), bytes.count)? = try? CBORDecoder(maxDepth: maxDepth).decodePrefix(bytes, from: offset)
        else { throw .trailingData }
        extensions = AppleExtensions(entries: entries)
    }
}
