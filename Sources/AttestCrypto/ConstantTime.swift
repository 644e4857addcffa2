internal import COpenSSL

/// Comparison whose time does not depend on where two equal-length byte strings differ, for hashes and
/// secrets an attacker may probe.
public enum ConstantTime {
    public static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        let (a, b) = (Array(a), Array(b))
        guard a.count == b.count else { return false }
        return CRYPTO_memcmp(a, b, a.count) == 0
    }
}
