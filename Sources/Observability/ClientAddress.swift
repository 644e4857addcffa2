#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The rate-limit key of a client address. An IPv6 client usually holds a whole /64 and can rotate through
/// it freely, so IPv6 addresses share their /64's bucket (and connection allowance); IPv4 addresses count
/// one by one.
public enum ClientAddress {
    public static func bucketKey(_ address: String) -> String {
        var raw = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &raw) == 1 else { return address }
        let bytes = withUnsafeBytes(of: raw) { Array($0.prefix(8)) }
        // An IPv4-mapped address (::ffff:a.b.c.d) is one IPv4 client.
        if withUnsafeBytes(of: raw, { Array($0.prefix(12)) }) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] {
            return withUnsafeBytes(of: raw) { $0.suffix(4).map(String.init).joined(separator: ".") }
        }
        return stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":") + "::/64"
    }
}
