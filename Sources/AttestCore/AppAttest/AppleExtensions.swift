/// The CBOR map Apple's 2026 authenticator data carries after the attested credential data (attestations)
/// or after the 37-byte header (assertions), with or without the ED flag. Values are kept as decoded:
/// a known key with an unexpected type is reported as it is, not rejected (CONTRACT 7).
public struct AppleExtensions: Sendable, Equatable {
    public static let bundleVersionKey = "apple_bundle_version_01"
    public static let validationCategoryKey = "apple_validation_category_01"

    public let entries: [CBORMapEntry]

    public init(entries: [CBORMapEntry]) {
        self.entries = entries
    }

    /// `apple_bundle_version_01`, normally text such as "1".
    public var bundleVersion: CBORValue? { value(Self.bundleVersionKey) }

    /// `apple_validation_category_01`, normally a 4-byte little-endian byte string.
    public var validationCategory: CBORValue? { value(Self.validationCategoryKey) }

    /// The validation category as an integer when it has its documented form (4 bytes, little-endian).
    public var validationCategoryNumber: UInt32? {
        guard case .bytes(let b)? = validationCategory, b.count == 4 else { return nil }
        return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
    }

    /// Names of keys other than the two known ones, sorted; non-text keys by their CBOR description.
    public var otherKeys: [String] {
        entries.compactMap { entry -> String? in
            if case .text(let name) = entry.key {
                return name == Self.bundleVersionKey || name == Self.validationCategoryKey ? nil : name
            }
            return entry.key.intValue.map(String.init) ?? "\(entry.key)"
        }.sorted()
    }

    private func value(_ key: String) -> CBORValue? {
        entries.first { $0.key == .text(key) }?.value
    }
}
