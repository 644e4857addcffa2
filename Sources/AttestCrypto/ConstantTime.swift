internal import COpenSSL

/// Comparison whose time does not depend on where two equal-length byte strings differ, for hashes and
/// secrets an attacker may probe.
public enum ConstantTime {
    public static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        // Arrays and slices compare in place; only a collection without contiguous storage is copied.
        let compared = a.withContiguousStorageIfAvailable { a in
            b.withContiguousStorageIfAvailable { b in equal(UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b)) }
        }
        return (compared ?? nil) ?? Array(a).withUnsafeBytes { a in Array(b).withUnsafeBytes { b in equal(a, b) } }
    }

    private static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        return a.count == 0 || CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0
    }
}
