import AttestCore
import Foundation

/// Encodes Android's KeyDescription (source.android.com, "Key and ID attestation") by hand, so each field and
/// tag can be varied one fault at a time:
///
///     KeyDescription ::= SEQUENCE {
///         attestationVersion INTEGER, attestationSecurityLevel ENUMERATED,
///         keyMintVersion INTEGER, keyMintSecurityLevel ENUMERATED,
///         attestationChallenge OCTET STRING, uniqueId OCTET STRING,
///         softwareEnforced AuthorizationList, hardwareEnforced AuthorizationList }
///
/// Each authorization is an EXPLICIT context-specific [tag] around its value; tags above 30 take the
/// high-tag-number form ([709] is BF 85 45). The lists hold what real devices put in them: the framework's
/// creationDateTime and attestationApplicationId software-enforced, the rest hardware-enforced.
enum AndroidKeyDescription {
    /// KeyMint's values (Tag.aidl and friends) for a signing EC key.
    static let purposeSign = 2
    static let algorithmEC = 3
    static let digestSHA256 = 4
    static func ecCurve(_ curve: AndroidDeviceKey.Curve) -> Int { curve == .p256 ? 1 : 2 }
    static func keySize(_ curve: AndroidDeviceKey.Curve) -> Int { curve == .p256 ? 256 : 384 }

    static func encode(_ options: AndroidAttestationOptions, curve: AndroidDeviceKey.Curve) -> [UInt8] {
        typealias Tag = AuthorizationList.Tag
        var software: [(tag: UInt32, value: [UInt8])] = []
        if let created = options.creationDateTime {
            software.append((Tag.creationDateTime.rawValue, integer(Int((created.timeIntervalSince1970 * 1000).rounded()))))
        }
        if options.includesApplicationId {
            software.append((Tag.attestationApplicationId.rawValue, DER.octetString(applicationId(options))))
        }

        var hardware: [(tag: UInt32, value: [UInt8])] = [
            (Tag.purpose.rawValue, DER.set([integer(purposeSign)])),
            (Tag.algorithm.rawValue, integer(algorithmEC)),
            (Tag.keySize.rawValue, integer(keySize(curve))),
            (Tag.digest.rawValue, DER.set([integer(digestSHA256)])),
            (Tag.ecCurve.rawValue, integer(ecCurve(curve))),
            (Tag.noAuthRequired.rawValue, DER.null),
        ]
        func optional(_ tag: Tag, _ value: Int?) {
            if let value { hardware.append((tag.rawValue, integer(value))) }
        }
        optional(.origin, options.origin)
        if let root = options.rootOfTrust { hardware.append((Tag.rootOfTrust.rawValue, rootOfTrust(root))) }
        optional(.osVersion, options.osVersion)
        optional(.osPatchLevel, options.osPatchLevel)
        optional(.vendorPatchLevel, options.vendorPatchLevel)
        optional(.bootPatchLevel, options.bootPatchLevel)

        for extra in options.extraAuthorizations {
            if extra.hardwareEnforced { hardware.append((extra.tag, extra.value)) } else { software.append((extra.tag, extra.value)) }
        }
        // Ascending (stable, so extras keep their order) or, as the fault, descending.
        for index in 0..<2 {
            var list = index == 0 ? software : hardware
            list = list.enumerated().sorted {
                $0.element.tag != $1.element.tag
                    ? ($0.element.tag < $1.element.tag) != options.tagsOutOfOrder : $0.offset < $1.offset
            }.map(\.element)
            if let duplicate = options.duplicateTag, let at = list.firstIndex(where: { $0.tag == duplicate.rawValue }) {
                list.insert(list[at], at: at + 1)
            }
            if index == 0 { software = list } else { hardware = list }
        }

        return DER.sequence([
            integer(options.attestationVersion),
            enumerated(options.attestationSecurityLevel.rawValue),
            integer(options.keyMintVersion),
            enumerated(options.keyMintSecurityLevel.rawValue),
            DER.octetString(options.challenge),
            DER.octetString(options.uniqueId),
            DER.sequence(software.map { explicit($0.tag, $0.value) }),
            DER.sequence(hardware.map { explicit($0.tag, $0.value) }),
        ])
    }

    /// AttestationApplicationId ::= SEQUENCE { SET OF AttestationPackageInfo { packageName OCTET STRING,
    /// version INTEGER }, SET OF OCTET STRING signatureDigests }; the digests sorted, as DER orders a SET OF.
    static func applicationId(_ options: AndroidAttestationOptions) -> [UInt8] {
        let package = DER.sequence([DER.octetString(Array(options.packageName.utf8)), integer(options.packageVersion)])
        let digests = options.signingCertificateDigests.map(DER.octetString).sorted { $0.lexicographicallyPrecedes($1) }
        return DER.sequence([DER.set([package]), DER.set(digests)])
    }

    /// RootOfTrust ::= SEQUENCE { verifiedBootKey OCTET STRING, deviceLocked BOOLEAN, verifiedBootState
    /// ENUMERATED, verifiedBootHash OCTET STRING (attestation version 3 and later) }.
    static func rootOfTrust(_ root: AndroidAttestationOptions.RootOfTrust) -> [UInt8] {
        DER.sequence([
            DER.octetString(root.verifiedBootKey),
            root.deviceLocked ? DER.booleanTrue : [0x01, 0x01, 0x00],
            enumerated(root.verifiedBootState.rawValue),
            root.verifiedBootHash.map(DER.octetString) ?? [],
        ])
    }

    /// `[tag] EXPLICIT`, context-specific constructed: one identifier octet up to 30, else 0xBF and the number
    /// in base 128, high bit set on all but the last digit.
    static func explicit(_ tag: UInt32, _ content: [UInt8]) -> [UInt8] {
        guard tag >= 31 else { return [0xA0 | UInt8(tag)] + DER.length(content.count) + content }
        var digits = [UInt8(tag & 0x7F)]
        var rest = tag >> 7
        while rest > 0 {
            digits.insert(UInt8(rest & 0x7F) | 0x80, at: 0)
            rest >>= 7
        }
        return [0xBF] + digits + DER.length(content.count) + content
    }

    /// A minimal two's-complement INTEGER; negative values are allowed so a test can write one where the
    /// schema forbids it.
    static func integer(_ value: Int) -> [UInt8] {
        var bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
        while bytes.count > 1, (bytes[0] == 0 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xFF && bytes[1] & 0x80 != 0) {
            bytes.removeFirst()
        }
        return DER.tlv(0x02, bytes)
    }

    static func enumerated(_ value: Int) -> [UInt8] {
        [0x0A] + integer(value).dropFirst()
    }
}
