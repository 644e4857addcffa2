/// A P-256 ECDSA signature as (r, s), for the re-encodings assertion faults need: high or low S, IEEE P1363,
/// r = 0.
struct ECDSASignature {
    /// 32-byte big-endian magnitudes.
    var r: [UInt8]
    var s: [UInt8]

    /// The order n of the P-256 group.
    private static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// Reads the SEQUENCE { INTEGER r, INTEGER s } OpenSSL writes for P-256 (always short-form lengths).
    init?(der: [UInt8]) {
        guard der.count >= 8, der[0] == 0x30, Int(der[1]) == der.count - 2, der[2] == 0x02 else { return nil }
        let rEnd = 4 + Int(der[3])
        guard rEnd + 2 <= der.count, der[rEnd] == 0x02, rEnd + 2 + Int(der[rEnd + 1]) == der.count else { return nil }
        r = Self.fixedWidth(der[4..<rEnd])
        s = Self.fixedWidth(der[(rEnd + 2)...])
    }

    private static func fixedWidth(_ magnitude: ArraySlice<UInt8>) -> [UInt8] {
        let digits = magnitude.drop { $0 == 0 }
        return [UInt8](repeating: 0, count: 32 - digits.count) + digits
    }

    var der: [UInt8] { DER.sequence([DER.integer(magnitude: r), DER.integer(magnitude: s)]) }

    /// r ‖ s, the IEEE P1363 form a DER-only verifier must reject.
    var p1363: [UInt8] { r + s }

    /// The same signature with s replaced by whichever of s and n - s is high (`high`) or low. Both verify.
    func normalizingS(high: Bool) -> ECDSASignature {
        var negated = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in (0..<32).reversed() {
            let difference = Int(Self.order[index]) - Int(s[index]) - borrow
            negated[index] = UInt8((difference + 256) % 256)
            borrow = difference < 0 ? 1 : 0
        }
        var copy = self
        let sIsHigh = s.lexicographicallyPrecedes(negated) == false
        if sIsHigh != high { copy.s = negated }
        return copy
    }
}
