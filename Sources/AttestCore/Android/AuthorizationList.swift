/// One of a KeyDescription's two AuthorizationLists: the KeyMint tags set on the key, each an EXPLICIT
/// context tag whose number is the tag's (Tag.aidl), in the order the device encoded them.
///
/// Every tag documented for attestations is parsed with its type; a tag this parser does not know (a
/// later KeyMint's) is skipped and listed, so a new Android release does not fail attestations, and a
/// tag the checks read is always of its documented type. A tag appearing twice is malformed.
public struct AuthorizationList: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case integer(Int)
        /// An integer tag's value above Int64's range (a 64-bit user secure id, a date of Long.MAX_VALUE
        /// milliseconds and more are unsigned 64-bit values on the device): read, kept, never a check's input.
        case unsigned(UInt64)
        case integers([Int])
        /// A tag whose presence is its value (ASN.1 NULL).
        case flag
        case bytes([UInt8])
        case rootOfTrust(RootOfTrust)
        case applicationId(AttestationApplicationId)
    }

    public struct Entry: Sendable, Equatable {
        public var tag: Tag
        public var value: Value
    }

    public enum Kind: Sendable { case integer, integers, flag, bytes, rootOfTrust, applicationId }

    /// The tags of Android's attestation schema (source.android.com, "Key and ID attestation") with the
    /// names Google's tools print.
    public enum Tag: UInt32, Sendable, CaseIterable {
        case purpose = 1, algorithm = 2, keySize = 3, blockMode = 4, digest = 5, padding = 6, callerNonce = 7
        case minMacLength = 8, ecCurve = 10, mlDsaVariant = 11, rsaPublicExponent = 200, rsaOaepMgfDigest = 203
        case rollbackResistance = 303, earlyBootOnly = 305, activeDateTime = 400, originationExpireDateTime = 401
        case usageExpireDateTime = 402, usageCountLimit = 405, userSecureId = 502, noAuthRequired = 503
        case userAuthType = 504, authTimeout = 505, allowWhileOnBody = 506, trustedUserPresenceRequired = 507
        case trustedConfirmationRequired = 508, unlockedDeviceRequired = 509, allApplications = 600
        case applicationId = 601, creationDateTime = 701, origin = 702, rollbackResistant = 703, rootOfTrust = 704
        case osVersion = 705, osPatchLevel = 706, attestationApplicationId = 709, attestationIdBrand = 710
        case attestationIdDevice = 711, attestationIdProduct = 712, attestationIdSerial = 713
        case attestationIdImei = 714, attestationIdMeid = 715, attestationIdManufacturer = 716
        case attestationIdModel = 717, vendorPatchLevel = 718, bootPatchLevel = 719
        case deviceUniqueAttestation = 720, attestationIdSecondImei = 723, moduleHash = 724

        public var kind: Kind {
            switch self {
            case .purpose, .blockMode, .digest, .padding, .rsaOaepMgfDigest: .integers
            case .callerNonce, .rollbackResistance, .earlyBootOnly, .noAuthRequired, .allowWhileOnBody,
                .trustedUserPresenceRequired, .trustedConfirmationRequired, .unlockedDeviceRequired, .allApplications,
                .rollbackResistant, .deviceUniqueAttestation:
                .flag
            case .applicationId, .attestationIdBrand, .attestationIdDevice, .attestationIdProduct, .attestationIdSerial,
                .attestationIdImei, .attestationIdMeid, .attestationIdManufacturer, .attestationIdModel,
                .attestationIdSecondImei, .moduleHash:
                .bytes
            case .rootOfTrust: .rootOfTrust
            case .attestationApplicationId: .applicationId
            default: .integer
            }
        }

        /// The name in Google's JSON rendering (its `android/keyattestation` test data).
        public var name: String {
            switch self {
            case .purpose: "purposes"
            case .algorithm: "algorithms"
            case .digest: "digests"
            case .padding: "paddings"
            case .blockMode: "blockModes"
            case .rsaOaepMgfDigest: "rsaOaepMgfDigests"
            default: "\(self)"
            }
        }
    }

    /// The parsed tags, in encoded order.
    public var entries: [Entry]
    /// Tag numbers present that this parser does not know, in encoded order.
    public var unknownTags: [UInt32]
    /// Whether the tags appeared in ascending order, as DER requires of the schema (informational: real
    /// devices do not always comply).
    public var tagsInOrder: Bool

    init(_ element: ASN1Element, in reader: ASN1Reader) throws(ASN1Error) {
        var r = try reader.children(of: element)
        entries = []
        unknownTags = []
        tagsInOrder = true
        var seen = Set<UInt32>()
        var previous: UInt32? = nil
        while !r.isAtEnd {
            let wrapper = try r.next()
            guard wrapper.tag.tagClass == .contextSpecific, wrapper.tag.constructed else {
                throw ASN1Error(.unexpectedTag, at: wrapper.start)
            }
            let number = wrapper.tag.number
            guard seen.insert(number).inserted else { throw ASN1Error(.invalidValue, at: wrapper.start) }
            if let previous, number < previous { tagsInOrder = false }
            previous = number
            var inner = try r.children(of: wrapper)
            guard let tag = Tag(rawValue: number) else {
                unknownTags.append(number)
                continue
            }
            let value = try Self.value(of: tag, &inner)
            try inner.finish()
            entries.append(Entry(tag: tag, value: value))
        }
    }

    private static func value(of tag: Tag, _ r: inout ASN1Reader) throws(ASN1Error) -> Value {
        switch tag.kind {
        case .integer:
            let value = try unsigned(&r)
            return value <= UInt64(Int.max) ? .integer(Int(value)) : .unsigned(value)
        case .integers:
            var set = try r.children(of: r.next(.set))
            var values = [Int]()
            while !set.isAtEnd { values.append(try nonNegative(&set)) }
            return .integers(values)
        case .flag:
            try r.null(of: r.next(.null))
            return .flag
        case .bytes:
            return .bytes(try r.octets(of: r.next(.octetString)))
        case .rootOfTrust:
            return .rootOfTrust(try RootOfTrust(r.next(.sequence), in: r))
        case .applicationId:
            return .applicationId(try AttestationApplicationId(der: r.octets(of: r.next(.octetString))))
        }
    }

    /// Every integer tag of the schema is a count, size, enum value, version, time or id: never negative,
    /// and on the device an unsigned 32- or 64-bit value.
    private static func unsigned(_ r: inout ASN1Reader) throws(ASN1Error) -> UInt64 {
        let element = try r.next(.integer)
        var bytes = try r.integerBytes(of: element)
        guard bytes.first! & 0x80 == 0 else { throw ASN1Error(.invalidValue, at: element.start) }
        if bytes.count > 1, bytes.first == 0 { bytes = bytes.dropFirst() }
        guard bytes.count <= 8 else { throw ASN1Error(.invalidValue, at: element.start) }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A set's members, as the integer tags' (sets of enum values: small).
    private static func nonNegative(_ r: inout ASN1Reader) throws(ASN1Error) -> Int {
        let element = try r.peek()
        let value = try unsigned(&r)
        guard value <= UInt64(Int.max) else { throw ASN1Error(.invalidValue, at: element.start) }
        return Int(value)
    }

    public subscript(tag: Tag) -> Value? { entries.first { $0.tag == tag }?.value }

    public func integer(_ tag: Tag) -> Int? {
        if case .integer(let value)? = self[tag] { return value }
        return nil
    }

    public var rootOfTrust: RootOfTrust? {
        if case .rootOfTrust(let value)? = self[.rootOfTrust] { return value }
        return nil
    }

    public var attestationApplicationId: AttestationApplicationId? {
        if case .applicationId(let value)? = self[.attestationApplicationId] { return value }
        return nil
    }

    /// KeyOrigin: 0 GENERATED (in the secure hardware), 1 DERIVED, 2 IMPORTED, 4 SECURELY_IMPORTED.
    public static let originGenerated = 0
}
