/// Lowercase hex, for digests in logs, fingerprints and test expectations.
public enum Hex {
    /// Inlinable, so a caller in another module gets a copy specialized to its collection: the generic one
    /// reaches every byte through the protocol's witnesses, and the worker encodes a keyId for each job's
    /// device identity.
    @inlinable
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var i = 0
            for b in bytes {
                out[i] = digits[Int(b >> 4)]
                out[i + 1] = digits[Int(b & 15)]
                i += 2
            }
            return i
        }
    }

    @usableFromInline static let digits = Array("0123456789abcdef".utf8)

    /// Decodes an even-length hex string (either case), or nil.
    public static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
