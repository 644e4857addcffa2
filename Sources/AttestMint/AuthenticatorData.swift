import AttestCore

/// Authenticator data layouts (WebAuthn section 6.1 as App Attest uses it) and their CBOR parts.
enum AuthenticatorData {
    /// rpIdHash ‖ flags ‖ signCount ‖ aaguid ‖ credentialIdLength ‖ credentialId ‖ COSE key ‖ extension map.
    static func attested(
        rpIdHash: [UInt8], flags: UInt8, counter: UInt32, aaguid: [UInt8], credentialId: [UInt8], coseKey: [UInt8],
        extensions: [UInt8]
    ) -> [UInt8] {
        rpIdHash + [flags] + bigEndian(UInt64(counter), bytes: 4) + aaguid
            + bigEndian(UInt64(credentialId.count), bytes: 2) + credentialId + coseKey + extensions
    }

    /// rpIdHash ‖ flags ‖ counter ‖ extension map: an assertion never carries attested credential data.
    static func assertion(rpIdHash: [UInt8], flags: UInt8, counter: UInt32, extensions: [UInt8]) -> [UInt8] {
        rpIdHash + [flags] + bigEndian(UInt64(counter), bytes: 4) + extensions
    }
}

extension CBORItem {
    /// Apple's 2026 authenticator-data extension map, with its keys in the order Apple's sample has them.
    /// - Parameters:
    ///   - validationCategory: written as the 4-byte little-endian byte string Apple uses (1 is 01 00 00 00).
    ///   - extraEntries: appended after Apple's keys, e.g. an unknown key a verifier must ignore.
    public static func appleExtensions(
        bundleVersion: String = "1", validationCategory: UInt32 = 1, extraEntries: [(key: CBORItem, value: CBORItem)] = []
    ) -> CBORItem {
        .map([
            (.text(AppleExtensions.bundleVersionKey), .text(bundleVersion)),
            (.text(AppleExtensions.validationCategoryKey), .bytes(bigEndian(UInt64(validationCategory), bytes: 4).reversed())),
        ] + extraEntries)
    }

    /// The COSE_Key of attested credential data: {1: 2 (EC2), 3: algorithm, -1: 1 (P-256), -2: x, -3: y}.
    /// `algorithm` other than -7 (ES256) is a fault.
    public static func coseKey(publicKeyX962: [UInt8], algorithm: Int64 = -7) -> CBORItem {
        let coordinates = publicKeyX962.dropFirst()
        let half = coordinates.count / 2
        return .map([
            (1, 2), (3, .int(algorithm)), (-1, 1),
            (-2, .bytes(Array(coordinates.prefix(half)))), (-3, .bytes(Array(coordinates.suffix(half)))),
        ])
    }
}
