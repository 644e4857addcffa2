/// An OBJECT IDENTIFIER kept in its encoded form, so comparing with a known OID is a byte comparison.
public struct OID: Sendable, Hashable, CustomStringConvertible {
    public let encoded: [UInt8]

    /// Validates base-128 arcs (no leading 0x80, last octet terminates).
    public init?(encoded: ArraySlice<UInt8>) {
        guard let last = encoded.last, last & 0x80 == 0 else { return nil }
        var atArcStart = true
        for b in encoded {
            if atArcStart && b == 0x80 { return nil }
            atArcStart = b & 0x80 == 0
        }
        self.encoded = Array(encoded)
    }

    /// From dotted text; for constants, so a typo traps at first use.
    public init(_ dotted: String) {
        let arcs = dotted.split(separator: ".").map { UInt64($0)! }
        precondition(arcs.count >= 2 && arcs[0] <= 2)
        var out = [UInt8]()
        for arc in [arcs[0] * 40 + arcs[1]] + arcs.dropFirst(2) {
            var chunk = [UInt8(arc & 0x7f)]
            var rest = arc >> 7
            while rest > 0 {
                chunk.insert(UInt8(rest & 0x7f) | 0x80, at: 0)
                rest >>= 7
            }
            out += chunk
        }
        self.encoded = out
    }

    public var description: String {
        var arcs = [UInt64]()
        var value: UInt64 = 0
        for b in encoded {
            value = value << 7 | UInt64(b & 0x7f)
            if b & 0x80 == 0 {
                arcs.append(value)
                value = 0
            }
        }
        guard let first = arcs.first else { return "" }
        let head = first < 80 ? [first / 40, first % 40] : [2, first - 80]
        return (head + arcs.dropFirst()).map(String.init).joined(separator: ".")
    }
}

extension OID {
    // Algorithms
    public static let ecPublicKey = OID("1.2.840.10045.2.1")
    public static let prime256v1 = OID("1.2.840.10045.3.1.7")
    public static let secp384r1 = OID("1.3.132.0.34")
    public static let ecdsaWithSHA256 = OID("1.2.840.10045.4.3.2")
    public static let ecdsaWithSHA384 = OID("1.2.840.10045.4.3.3")
    public static let ecdsaWithSHA512 = OID("1.2.840.10045.4.3.4")
    public static let sha256 = OID("2.16.840.1.101.3.4.2.1")
    public static let rsaEncryption = OID("1.2.840.113549.1.1.1")
    public static let sha256WithRSAEncryption = OID("1.2.840.113549.1.1.11")
    public static let sha384WithRSAEncryption = OID("1.2.840.113549.1.1.12")
    public static let sha512WithRSAEncryption = OID("1.2.840.113549.1.1.13")
    // X.509 extensions
    public static let basicConstraints = OID("2.5.29.19")
    public static let keyUsage = OID("2.5.29.15")
    public static let extendedKeyUsage = OID("2.5.29.37")
    // CMS
    public static let signedData = OID("1.2.840.113549.1.7.2")
    public static let data = OID("1.2.840.113549.1.7.1")
    public static let contentTypeAttribute = OID("1.2.840.113549.1.9.3")
    public static let messageDigestAttribute = OID("1.2.840.113549.1.9.4")
    // Apple
    /// The App Attest credential certificate's nonce extension.
    public static let appleNonce = OID("1.2.840.113635.100.8.2")
    /// An extension of 2026 App Attest leaf certificates (1.2.840.113635.100.8.6).
    public static let appleAppAttestLeafInfo = OID("1.2.840.113635.100.8.6")
    // Android
    /// Android key attestation's KeyDescription extension.
    public static let androidKeyDescription = OID("1.3.6.1.4.1.11129.2.1.17")
    /// The marker extension every App Attest fraud receipt signing certificate carries.
    public static let appleReceiptSigner = OID("1.2.840.113635.100.12.15")
}
