import AttestCore
internal import COpenSSL

/// Conversions between the DER ECDSA-Sig-Value OpenSSL signs and verifies and the fixed-width r ‖ s that
/// JOSE (RFC 7518 §3.4) puts in tokens, through OpenSSL's own ECDSA_SIG and BIGNUM codecs.
public enum ECDSASignatureEncoding {
    /// r ‖ s, each left-padded to `coordinateSize` bytes; nil when `der` is not a strict DER signature or a
    /// value does not fit.
    public static func raw(fromDER der: [UInt8], coordinateSize: Int) -> [UInt8]? {
        let sig = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let sig else {
            ERR_clear_error()
            return nil
        }
        defer { ECDSA_SIG_free(sig) }
        // d2i takes BER (long-form lengths) and stops before trailing bytes: only an input that re-encodes to
        // itself is one DER signature (OpenSSL's verification decides the same way).
        guard encode(sig) == der else { return nil }
        var out = [UInt8](repeating: 0, count: 2 * coordinateSize)
        let written = out.withUnsafeMutableBufferPointer { buffer in
            let size = Int32(coordinateSize)
            return BN_bn2binpad(ECDSA_SIG_get0_r(sig), buffer.baseAddress, size) == size
                && BN_bn2binpad(ECDSA_SIG_get0_s(sig), buffer.baseAddress! + coordinateSize, size) == size
        }
        return written ? out : nil
    }

    /// The DER ECDSA-Sig-Value for r ‖ s (two equal halves, big-endian); nil for an empty or odd-length input.
    public static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard !raw.isEmpty, raw.count % 2 == 0, let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let half = Int32(raw.count / 2)
        let (r, s) = raw.withUnsafeBufferPointer { buffer in
            (BN_bin2bn(buffer.baseAddress, half, nil), BN_bin2bn(buffer.baseAddress! + Int(half), half, nil))
        }
        // ECDSA_SIG_set0 takes ownership of both numbers on success only.
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        return encode(sig)
    }

    /// The DER encoding of an ECDSA_SIG.
    private static func encode(_ sig: OpaquePointer) -> [UInt8]? {
        let length = i2d_ECDSA_SIG(sig, nil)
        guard length > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(sig, &cursor)
        }
        return written == length ? out : nil
    }

    /// P-256's group order n, big-endian.
    static let p256Order = Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!
    /// ⌊n / 2⌋: the largest low-S value.
    static let p256HalfOrder = Hex.decode("7fffffff800000007fffffffffffffffde737d56d38bcf4279dce5617e3192a8")!

    /// Whether the P-256 signature r ‖ s (64 bytes) has s ≤ n/2. (r, s) and (r, n − s) both verify, so
    /// accepting only the low one leaves a signed token exactly one valid string.
    public static func isLowS(p256Raw raw: [UInt8]) -> Bool {
        // Both sides are 32 big-endian bytes, so byte order is numeric order.
        raw.count == 64 && !p256HalfOrder.lexicographicallyPrecedes(raw[32...])
    }

    /// r ‖ s with s replaced by n − s when it is high; the same signature otherwise.
    public static func lowS(p256Raw raw: [UInt8]) -> [UInt8] {
        guard raw.count == 64, !isLowS(p256Raw: raw) else { return raw }
        return negatingS(p256Raw: raw)
    }

    /// r ‖ (n − s) for a P-256 r ‖ s (64 bytes, 0 < s < n): the twin that verifies as well, high where s is low.
    public static func negatingS(p256Raw raw: [UInt8]) -> [UInt8] {
        precondition(raw.count == 64, "a P-256 r ‖ s is 64 bytes")
        var out = raw
        var borrow = 0
        for i in (0..<32).reversed() {
            let difference = Int(p256Order[i]) - Int(raw[32 + i]) - borrow
            out[32 + i] = UInt8(truncatingIfNeeded: difference)
            borrow = difference < 0 ? 1 : 0
        }
        return out
    }
}
